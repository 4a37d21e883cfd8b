// Command controlplane links the Kubernetes control plane, etcd, kubectl and kustomize into one
// binary for gpudra's tests, so the packages they share compile once. The first argument names
// the program: controlplane etcd|kube-apiserver|kube-scheduler|kube-controller-manager|kubectl|kustomize ARGS...
// (or call it through a link with one of those names). Nothing here runs outside tests.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// programs maps a program name to the function that runs it with os.Args already set to
// [name, args...] and returns the process's exit code.
var programs = map[string]func() int{
	"etcd":                    runEtcd,
	"kube-apiserver":          runAPIServer,
	"kube-scheduler":          runScheduler,
	"kube-controller-manager": runControllerManager,
	"kubectl":                 runKubectl,
	"kustomize":               runKustomize,
	"certs":                   runCerts,
}

func main() {
	name := filepath.Base(os.Args[0])
	if _, linked := programs[name]; !linked {
		if len(os.Args) < 2 {
			usage()
		}
		name = os.Args[1]
		os.Args = append([]string{name}, os.Args[2:]...)
	}
	run, ok := programs[name]
	if !ok {
		usage()
	}
	os.Exit(run())
}

func usage() {
	names := make([]string, 0, len(programs))
	for name := range programs {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: controlplane %s [ARGS...]\n", strings.Join(names, "|"))
	os.Exit(2)
}
