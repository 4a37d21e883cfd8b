//go:build k8s132

package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	dracel "k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

type classLister []*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) { return l, nil }

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, class := range l {
		if class.Name == name {
			return class, nil
		}
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

// allocate: as in allocate_137.go, with 1.32's allocator (claims given to NewAllocator, one
// allocated-device set, no shared devices). 1.32 has no ErrFailedAllocationOnNode.
func (o *oracle) allocate(req request) (answer, error) {
	var node corev1.Node
	if err := strictJSON(req.Node, &node); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	classes, err := decodeAll[resourceapi.DeviceClass](req.Classes, "classes")
	if err != nil {
		return nil, err
	}
	slices, err := decodeAll[resourceapi.ResourceSlice](req.Slices, "slices")
	if err != nil {
		return nil, err
	}
	claims, err := decodeAll[resourceapi.ResourceClaim](req.Claims, "claims")
	if err != nil {
		return nil, err
	}
	for _, claim := range claims {
		setDefaults(claim)
	}
	allocated := sets.New[structured.DeviceID]()
	for i, raw := range req.Allocated {
		var result resourceapi.AllocationResult
		if err := strictJSON(raw, &result); err != nil {
			return nil, fmt.Errorf("allocated[%d]: %w", i, err)
		}
		for _, device := range result.Devices.Results {
			if !ptr.Deref(device.AdminAccess, false) {
				allocated.Insert(structured.MakeDeviceID(device.Driver, device.Pool, device.Device))
			}
		}
	}
	ctx := context.Background()
	out := answer{"results": nil, "error": nil, "nodeError": false}
	allocator, err := structured.NewAllocator(ctx, feature(req.Features, "DRAAdminAccess"), claims, allocated,
		classLister(classes), slices, dracel.NewCache(100))
	if err != nil {
		out["error"] = err.Error()
		return out, nil
	}
	results, err := allocator.Allocate(ctx, &node)
	if err != nil {
		out["error"] = err.Error()
		return out, nil
	}
	if results != nil {
		out["results"] = results
	}
	return out, nil
}

// setDefaults: as in allocate_137.go, for 1.32's flat v1beta1 requests
// (k8s.io/kubernetes pkg/apis/resource/v1beta1/defaults.go).
func setDefaults(claim *resourceapi.ResourceClaim) {
	for i := range claim.Spec.Devices.Requests {
		request := &claim.Spec.Devices.Requests[i]
		if request.AllocationMode == "" {
			request.AllocationMode = resourceapi.DeviceAllocationModeExactCount
		}
		if request.AllocationMode == resourceapi.DeviceAllocationModeExactCount && request.Count == 0 {
			request.Count = 1
		}
	}
}
