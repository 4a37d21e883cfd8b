//go:build !kube133

package main

import (
	"os"

	"k8s.io/component-base/logs"
	kubectl "k8s.io/kubectl/pkg/cmd"
)

// presetKubectlVerbosity: kubectl reads its verbosity before flag parsing so that plugin lookup
// and .kuberc loading log at the level asked for; the upstream main does the same.
func presetKubectlVerbosity() {
	_, _ = logs.GlogSetter(kubectl.GetLogVerbosity(os.Args))
}
