package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// decoder decodes documents as the API server does for a create with fieldValidation=Strict
// (kubectl's default): the serializer of the body's media type, in strict mode, into the
// typed object of the document's apiVersion and kind.
type decoder struct {
	json, yaml runtime.Decoder
}

func newDecoder(scheme *runtime.Scheme) decoder {
	options := kjson.SerializerOptions{Strict: true}
	jsonSerializer := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, options)
	options.Yaml = true
	yamlSerializer := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, options)
	return decoder{json: jsonSerializer, yaml: yamlSerializer}
}

// decode answers with:
//
//	registered: whether the release has a typed API for the apiVersion/kind (false: a CRD or a
//	            kind this oracle does not register; nothing else is said)
//	strict:     the strict decoding errors, one per unknown or duplicate field, worded as the
//	            API server words them ("unknown field \"spec.x\"", "duplicate field \"y\"")
//	fatal:      an error that makes the object undecodable (a string where an int belongs)
//	message:    the API server's whole message for the request, when it refuses it
//
// A v1 List is decoded item by item (kubectl sends the items one at a time); an item's
// errors are prefixed with "items[i]: ".
func (d decoder) decode(data []byte) answer {
	dec := d.yaml
	if utilyaml.IsJSONBuffer(data) {
		dec = d.json
	}
	gvk, err := peekKind(data)
	if err != nil {
		return answer{"registered": false, "fatal": err.Error(), "strict": []string{}}
	}
	if gvk.Group == "" && gvk.Version == "v1" && gvk.Kind == "List" {
		return d.decodeList(data, dec)
	}
	obj, _, err := dec.Decode(data, nil, nil)
	out := answer{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind, "registered": true,
		"strict": []string{}, "fatal": nil, "message": nil}
	if err == nil {
		return out
	}
	if runtime.IsNotRegisteredError(err) {
		out["registered"] = false
		return out
	}
	if strictErr, ok := runtime.AsStrictDecodingError(err); ok && obj != nil {
		out["strict"] = messages(strictErr.Errors())
	} else {
		out["fatal"] = err.Error()
	}
	out["message"] = fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err)
	return out
}

func (d decoder) decodeList(data []byte, dec runtime.Decoder) answer {
	out := answer{"apiVersion": "v1", "kind": "List", "registered": true, "strict": []string{},
		"fatal": nil, "message": nil}
	var strict []string
	if _, err := yaml.YAMLToJSONStrict(data); err != nil { // duplicates anywhere in the text
		strict = append(strict, err.Error())
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	jsonData, err := yaml.YAMLToJSON(data)
	if err == nil {
		err = sigsjson.UnmarshalCaseSensitivePreserveInts(jsonData, &list)
	}
	if err != nil {
		out["fatal"] = err.Error()
		return out
	}
	for i, item := range list.Items {
		raw, err := json.Marshal(item)
		if err != nil {
			out["fatal"] = err.Error()
			return out
		}
		one := d.decode(raw)
		if one["registered"] == false {
			continue
		}
		for _, message := range one["strict"].([]string) {
			strict = append(strict, fmt.Sprintf("items[%d]: %s", i, message))
		}
		if fatal, ok := one["fatal"].(string); ok {
			out["fatal"] = fmt.Sprintf("items[%d]: %s", i, fatal)
		}
	}
	if strict != nil {
		out["strict"] = strict
	}
	return out
}

// peekKind reads apiVersion and kind as the serializer does, leniently.
func peekKind(data []byte) (schema.GroupVersionKind, error) {
	jsonData, err := yaml.YAMLToJSON(data)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	gvk, err := kjson.DefaultMetaFactory.Interpret(jsonData)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	if gvk.Kind == "" {
		return *gvk, errors.New("Object 'Kind' is missing")
	}
	return *gvk, nil
}

func messages(errs []error) []string {
	out := make([]string, 0, len(errs))
	for _, err := range errs {
		out = append(out, err.Error())
	}
	return out
}

// strictJSON unmarshals a request (or an object inside one) and refuses unknown and duplicate
// fields, so that a test that sends a misspelt field fails instead of being half-read.
func strictJSON(data []byte, into any) error {
	strict, err := sigsjson.UnmarshalStrict(data, into)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return errors.Join(strict...)
	}
	return nil
}
