package strictyaml_test

import (
	"fmt"

	"github.com/failoverkit/failover/internal/strictyaml"
)

type workload struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Replicas int32  `json:"replicas"`
	Ports    []struct {
		Port int32 `json:"port"`
	} `json:"ports,omitempty"`
}

// Split a stream, decode each document strictly and report where each
// problem is: the document, the line it starts on and the field.
func Example() {
	stream := []byte(`# two workloads
kind: Deployment
name: web
replicas: 3
--- # the second one has typos
kind: Deployment
name: api
Replicas: 2
ports: [{port: 80}, {prot: 8080}]
---
kind: Deployment
name: db
replicas: three
`)
	for _, doc := range strictyaml.Split(stream) {
		var w workload
		if err := strictyaml.Decode(doc, &w); err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("document %d (line %d): %s with %d replicas\n", doc.Index, doc.Line, w.Name, w.Replicas)
	}
	// Output:
	// document 1 (line 2): web with 3 replicas
	// document 2 (line 6): unknown field "Replicas" (did you mean "replicas"?), unknown field "ports[1].prot"
	// document 3 (line 11): replicas: "three": want an integer (int32)
}
