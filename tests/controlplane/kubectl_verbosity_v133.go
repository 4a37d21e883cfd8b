//go:build kube133

package main

// presetKubectlVerbosity does nothing for a 1.33 build (go.v133.mod): that kubectl has no
// GetLogVerbosity, and its upstream main sets no verbosity before flag parsing either.
func presetKubectlVerbosity() {}
