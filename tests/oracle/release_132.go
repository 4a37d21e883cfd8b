//go:build k8s132

package main

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// release is the Kubernetes minor release of go.132.mod's k8s.io modules: the oldest gpudra
// targets, and the only one whose resource.k8s.io is v1beta1 alone (flat requests, no
// firstAvailable, no device taints, no partitionable devices, no consumable capacity).
const release = "1.32"

func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme,
		resourcev1beta1.AddToScheme, resourcev1alpha3.AddToScheme,
	} {
		utilruntime.Must(add(scheme))
	}
	return scheme
}

// defaultFeatures: in 1.32 the allocator knows one gate, DRAAdminAccess (alpha, off).
func defaultFeatures() map[string]bool {
	return map[string]bool{"DRAAdminAccess": false}
}
