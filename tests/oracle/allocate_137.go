//go:build !k8s132

package main

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
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

func allocatorFeatures(requested map[string]bool) structured.Features {
	// As the scheduler maps gates to allocator features (pkg/scheduler/framework/plugins/
	// dynamicresources AllocatorFeatures).
	return structured.Features{
		AdminAccess:             feature(requested, "DRAAdminAccess"),
		PrioritizedList:         feature(requested, "DRAPrioritizedList"),
		PartitionableDevices:    feature(requested, "DRAPartitionableDevices"),
		DeviceTaints:            feature(requested, "DRADeviceTaints"),
		DeviceBindingAndStatus:  feature(requested, "DRADeviceBindingConditions") && feature(requested, "DRAResourceClaimDeviceStatus"),
		ConsumableCapacity:      feature(requested, "DRAConsumableCapacity"),
		FractionalCapacityRange: feature(requested, "DRAFractionalCapacityRange"),
		ListTypeAttributes:      feature(requested, "DRAListTypeAttributes"),
		OptionalNodeOperations:  feature(requested, "DRAOptionalNodeOperations"),
		DerivedAttributes:       feature(requested, "DRADerivedAttributes"),
		CompatibilityGroups:     feature(requested, "DRADeviceCompatibilityGroups"),
	}
}

// allocatedState is what the scheduler gathers from claims that are already allocated
// (dynamicresources foreachAllocatedDevice / GatherAllocatedState): admin-access results take
// nothing; with consumable capacity, results with a shareID share the device and add their
// consumed capacity; everything else takes the device.
func allocatedState(results []resourceapi.AllocationResult, consumable bool) structured.AllocatedState {
	state := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, allocation := range results {
		for _, result := range allocation.Devices.Results {
			if ptr.Deref(result.AdminAccess, false) {
				continue
			}
			id := structured.MakeDeviceID(result.Driver, result.Pool, result.Device)
			if consumable && result.ShareID != nil {
				state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, result.ShareID))
				if result.ConsumedCapacity != nil {
					state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, result.ConsumedCapacity))
				}
				continue
			}
			state.AllocatedDevices.Insert(id)
		}
	}
	return state
}

// allocate runs the structured allocator once, for all claims of one pod on one node, as the
// scheduler's Filter does. Answer: "results" (one AllocationResult per claim) or null with
// "error" (nil when the claims simply do not fit: the allocator returns no result and no error)
// and "nodeError" (the error only affects this node: structured.ErrFailedAllocationOnNode).
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
	var allocated []resourceapi.AllocationResult
	for i, raw := range req.Allocated {
		var result resourceapi.AllocationResult
		if err := strictJSON(raw, &result); err != nil {
			return nil, fmt.Errorf("allocated[%d]: %w", i, err)
		}
		allocated = append(allocated, result)
	}
	features := allocatorFeatures(req.Features)
	ctx := context.Background()
	out := answer{"results": nil, "error": nil, "nodeError": false}
	allocator, err := structured.NewAllocator(ctx, features, allocatedState(allocated, features.ConsumableCapacity),
		classLister(classes), slices, dracel.NewCache(100, celFeatures(req.Features)))
	if err != nil {
		out["error"] = err.Error()
		return out, nil
	}
	results, err := allocator.Allocate(ctx, &node, claims)
	if err != nil {
		out["error"] = err.Error()
		out["nodeError"] = errors.Is(err, structured.ErrFailedAllocationOnNode)
		return out, nil
	}
	if results != nil {
		out["results"] = results
	}
	return out, nil
}

// setDefaults applies what the API server stores for a claim that omits them
// (k8s.io/kubernetes v1.37.2 pkg/apis/resource/v1/defaults.go): allocationMode ExactCount and,
// for ExactCount, count 1; on requests and on firstAvailable subrequests.
func setDefaults(claim *resourceapi.ResourceClaim) {
	defaults := func(mode *resourceapi.DeviceAllocationMode, count *int64) {
		if *mode == "" {
			*mode = resourceapi.DeviceAllocationModeExactCount
		}
		if *mode == resourceapi.DeviceAllocationModeExactCount && *count == 0 {
			*count = 1
		}
	}
	for i := range claim.Spec.Devices.Requests {
		request := &claim.Spec.Devices.Requests[i]
		if request.Exactly != nil {
			defaults(&request.Exactly.AllocationMode, &request.Exactly.Count)
		}
		for j := range request.FirstAvailable {
			defaults(&request.FirstAvailable[j].AllocationMode, &request.FirstAvailable[j].Count)
		}
	}
}
