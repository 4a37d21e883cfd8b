package main

import (
	"encoding/json"
	"fmt"
)

// decodeAll strictly decodes API objects of one type (a test that misspells a field fails).
func decodeAll[T any](raws []json.RawMessage, what string) ([]*T, error) {
	out := make([]*T, 0, len(raws))
	for i, raw := range raws {
		obj := new(T)
		if err := strictJSON(raw, obj); err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", what, i, err)
		}
		out = append(out, obj)
	}
	return out, nil
}
