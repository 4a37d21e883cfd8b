//go:build k8s132

package main

import (
	"context"
	"encoding/json"

	resourceapi "k8s.io/api/resource/v1beta1"
	"k8s.io/apiserver/pkg/cel/environment"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

// celDevice: as in cel_137.go. 1.32 has no allowMultipleAllocations; it is accepted and ignored
// so that both builds read the same requests.
type celDevice struct {
	Driver                   string                                                    `json:"driver"`
	AllowMultipleAllocations *bool                                                     `json:"allowMultipleAllocations,omitempty"`
	Attributes               map[resourceapi.QualifiedName]resourceapi.DeviceAttribute `json:"attributes,omitempty"`
	Capacity                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity  `json:"capacity,omitempty"`
}

// validateSelector: as in cel_137.go, with 1.32's compiler (no feature-dependent device type).
func validateSelector(expression string) answer {
	if len(expression) > resourceapi.CELSelectorExpressionMaxLength {
		return answer{"error": "Too long: may not be more than 10240 bytes", "errorType": "TooLong", "cost": nil}
	}
	envType := environment.NewExpressions
	result := dracel.GetCompiler().CompileCELExpression(expression, dracel.Options{EnvType: &envType})
	if result.Error != nil {
		return answer{"error": result.Error.Detail, "errorType": string(result.Error.Type), "cost": nil}
	}
	if result.MaxCost > resourceapi.CELSelectorExpressionMaxCost {
		return answer{"error": "too complex, exceeds cost limit", "errorType": "Forbidden", "cost": result.MaxCost}
	}
	return answer{"error": nil, "errorType": nil, "cost": result.MaxCost}
}

// evaluateSelector: as in cel_137.go. 1.32's allocator reports run-time errors unenhanced.
func evaluateSelector(expression string, rawDevices []json.RawMessage, _ map[string]bool) (answer, error) {
	out := answer{"validation": validateSelector(expression)}
	compiled := dracel.NewCache(1).GetOrCompile(expression)
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
			Driver: device.Driver, Attributes: device.Attributes, Capacity: device.Capacity})
		result := answer{"match": matches, "error": nil, "cost": nil}
		if err != nil {
			result["match"] = nil
			result["error"] = err.Error()
		}
		if details != nil && details.ActualCost() != nil {
			result["cost"] = *details.ActualCost()
		}
		results = append(results, result)
	}
	out["results"] = results
	return out, nil
}
