package main

import (
	_ "time/tzdata" // CronJob time zones, as the upstream kube-apiserver and controller manager build them

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func runAPIServer() int { return cli.Run(apiserver.NewAPIServerCommand()) }

func runScheduler() int { return cli.Run(scheduler.NewSchedulerCommand()) }

func runControllerManager() int { return cli.Run(controllermanager.NewControllerManagerCommand()) }

func runKubectl() int {
	presetKubectlVerbosity()
	if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
		kubectlutil.CheckErr(err) // prints kubectl's one-line error and exits 1
	}
	return 0
}
