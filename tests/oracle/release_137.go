//go:build !k8s132

package main

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// release is the Kubernetes minor release of go.mod's k8s.io modules.
const release = "1.37"

func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, resourcev1.AddToScheme,
		resourcev1beta2.AddToScheme, resourcev1beta1.AddToScheme, resourcev1alpha3.AddToScheme,
	} {
		utilruntime.Must(add(scheme))
	}
	return scheme
}

// defaultFeatures are the DRA feature gates as a 1.37 control plane has them by default
// (k8s.io/kubernetes v1.37.2 pkg/features/kube_features.go). DRAFractionalCapacityRange is on
// only with --min-compatibility-version >= 1.37, which is not the default (1.36).
func defaultFeatures() map[string]bool {
	return map[string]bool{
		"DRAAdminAccess":               true,
		"DRAConsumableCapacity":        true,
		"DRADeviceBindingConditions":   true,
		"DRADeviceCompatibilityGroups": false,
		"DRADerivedAttributes":         false,
		"DRADeviceTaints":              true,
		"DRAFractionalCapacityRange":   false,
		"DRAListTypeAttributes":        false,
		"DRAOptionalNodeOperations":    false,
		"DRAPartitionableDevices":      true,
		"DRAPrioritizedList":           true,
		"DRAResourceClaimDeviceStatus": true,
	}
}
