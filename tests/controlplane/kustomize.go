package main

import (
	"sigs.k8s.io/kustomize/kustomize/v5/commands"
)

func runKustomize() int {
	if err := commands.NewDefaultCommand().Execute(); err != nil {
		return 1
	}
	return 0
}
