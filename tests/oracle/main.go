// Command oracle answers gpudra's tests with Kubernetes' own code: strict decoding of typed API
// objects, the DRA CEL environment, and the structured allocator the scheduler runs.
//
// Protocol: one JSON request per line on stdin, one JSON answer per line on stdout, in order.
// Every request has "op"; the answer has "ok" (false only for a request the oracle cannot
// read, with "error"). Ops:
//
//	{"op": "version"}
//	{"op": "decode", "doc": "<one YAML or JSON document>"}
//	{"op": "cel", "expression": "...", "devices": [{driver, attributes, capacity, allowMultipleAllocations}], "features": {...}}
//	{"op": "allocate", "node": {...}, "classes": [...], "slices": [...], "claims": [...], "allocated": [...], "features": {...}}
//
// The same sources build against two Kubernetes releases: go.mod (1.37) and, with
// -modfile=go.132.mod -tags k8s132, the oldest release gpudra targets (1.32). Files named
// *_137.go and *_132.go hold what differs between the two APIs.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

type request struct {
	Op string `json:"op"`

	Doc string `json:"doc"` // decode

	Expression string            `json:"expression"` // cel
	Devices    []json.RawMessage `json:"devices"`

	Node      json.RawMessage   `json:"node"` // allocate
	Classes   []json.RawMessage `json:"classes"`
	Slices    []json.RawMessage `json:"slices"`
	Claims    []json.RawMessage `json:"claims"`
	Allocated []json.RawMessage `json:"allocated"` // AllocationResults of claims already allocated

	Features map[string]bool `json:"features"` // feature gates by name; unset: the release default
}

type answer map[string]any

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	encoder := json.NewEncoder(out)
	encoder.SetEscapeHTML(false)
	o := newOracle()
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			if encodeErr := encoder.Encode(o.handle(line)); encodeErr != nil {
				fmt.Fprintln(os.Stderr, "oracle: cannot encode an answer:", encodeErr)
				os.Exit(1)
			}
			if flushErr := out.Flush(); flushErr != nil {
				os.Exit(1) // the reader went away
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "oracle: reading stdin:", err)
			os.Exit(1)
		}
	}
}

type oracle struct {
	decoder decoder
}

func newOracle() *oracle {
	return &oracle{decoder: newDecoder(newScheme())}
}

func (o *oracle) handle(line []byte) (result answer) {
	defer func() {
		if r := recover(); r != nil {
			result = answer{"ok": false, "error": fmt.Sprintf("oracle panicked: %v\n%s", r, debug.Stack())}
		}
	}()
	var req request
	if err := strictJSON(line, &req); err != nil {
		return answer{"ok": false, "error": "bad request: " + err.Error()}
	}
	var out answer
	var err error
	switch req.Op {
	case "version":
		out = versionAnswer()
	case "decode":
		out = o.decoder.decode([]byte(req.Doc))
	case "cel":
		out, err = evaluateSelector(req.Expression, req.Devices, req.Features)
	case "allocate":
		out, err = o.allocate(req)
	default:
		err = fmt.Errorf("unknown op %q", req.Op)
	}
	if err != nil {
		return answer{"ok": false, "error": "bad request: " + err.Error()}
	}
	out["ok"] = true
	return out
}

// versionAnswer names the release this binary was built against and the k8s.io modules in it.
func versionAnswer() answer {
	modules := map[string]string{}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if strings.HasPrefix(dep.Path, "k8s.io/") {
				modules[dep.Path] = dep.Version
			}
		}
	}
	return answer{"release": release, "kubernetes": "v1." + strings.TrimPrefix(modules["k8s.io/api"], "v0."),
		"modules": modules, "features": defaultFeatures()}
}

// feature reads a gate from the request, falling back to the release default.
func feature(requested map[string]bool, name string) bool {
	if value, ok := requested[name]; ok {
		return value
	}
	return defaultFeatures()[name]
}
