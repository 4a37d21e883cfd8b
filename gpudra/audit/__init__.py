"""The audit: `engine` runs every registered checker over what a source yields into one Report;
`run` is the command's use case over it (files, one cluster or many, the baseline, the report
ConfigMap); `multicluster` reads many kube contexts, each by the one cluster audit.

Importing the package is cheap: the rules load with `engine`, when an audit runs."""
