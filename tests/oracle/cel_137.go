//go:build !k8s132

package main

import (
	"context"
	"encoding/json"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apiserver/pkg/cel/environment"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

// celDevice is what a selector sees of one device (the fields of dracel.Device), in API form:
// attributes {"gpu.nvidia.com/productName": {"string": "..."}}, capacity {"memory": {"value": "80Gi"}}.
type celDevice struct {
	Driver                   string                                                    `json:"driver"`
	AllowMultipleAllocations *bool                                                     `json:"allowMultipleAllocations,omitempty"`
	Attributes               map[resourceapi.QualifiedName]resourceapi.DeviceAttribute `json:"attributes,omitempty"`
	Capacity                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity  `json:"capacity,omitempty"`
}

func celFeatures(requested map[string]bool) dracel.Features {
	return dracel.Features{
		EnableConsumableCapacity: feature(requested, "DRAConsumableCapacity"),
		EnableListTypeAttributes: feature(requested, "DRAListTypeAttributes"),
	}
}

// validateSelector is what the API server's validation does with a new selector
// (pkg/apis/resource/validation validateCELExpression): the length limit, a compile in the
// NewExpressions environment with cost estimation, and the cost limit.
func validateSelector(expression string, features dracel.Features) answer {
	if len(expression) > resourceapi.CELSelectorExpressionMaxLength {
		return answer{"error": "Too long: may not be more than 10240 bytes", "errorType": "TooLong", "cost": nil}
	}
	envType := environment.NewExpressions
	result := dracel.GetCompiler(features).CompileCELExpression(expression, dracel.Options{EnvType: &envType})
	if result.Error != nil {
		return answer{"error": result.Error.Detail, "errorType": string(result.Error.Type), "cost": nil}
	}
	if result.MaxCost > resourceapi.CELSelectorExpressionMaxCost {
		return answer{"error": "too complex, exceeds cost limit", "errorType": "Forbidden", "cost": result.MaxCost}
	}
	return answer{"error": nil, "errorType": nil, "cost": result.MaxCost}
}

// evaluateSelector validates `expression` as the API server does, then evaluates it on each
// device as the allocator does: compiled through its cache (the StoredExpressions environment,
// no cost estimate), run with the runtime cost limit, errors enhanced with the allocator's hint.
func evaluateSelector(expression string, rawDevices []json.RawMessage, requested map[string]bool) (answer, error) {
	features := celFeatures(requested)
	out := answer{"validation": validateSelector(expression, features)}
	compiled := dracel.NewCache(1, features).GetOrCompile(expression)
	if compiled.Error != nil {
		out["compileError"] = compiled.Error.Detail
		out["results"] = []answer{}
		return out, nil
	}
	out["compileError"] = nil
	results := make([]answer, 0, len(rawDevices))
	for _, raw := range rawDevices {
		var device celDevice
		if err := strictJSON(raw, &device); err != nil {
			return nil, err
		}
		matches, details, err := compiled.DeviceMatches(context.Background(), dracel.Device{
			Driver: device.Driver, AllowMultipleAllocations: device.AllowMultipleAllocations,
			Attributes: device.Attributes, Capacity: device.Capacity})
		result := answer{"match": matches, "error": nil, "cost": nil}
		if err != nil {
			result["match"] = nil
			result["error"] = dracel.EnhanceRuntimeError(err).Error()
		}
		if details != nil && details.ActualCost() != nil {
			result["cost"] = *details.ActualCost()
		}
		results = append(results, result)
	}
	out["results"] = results
	return out, nil
}
