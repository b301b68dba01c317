package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

type kubeDocument struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Name       string          `json:"name"`
	Object     json.RawMessage `json:"object"`
}

// kubeCommand checks every document strictly against the Go API types (what kubeconform does with
// JSON schemas downloaded at run time, here from the types the API server itself is built from).
func kubeCommand(args []string, out io.Writer) error {
	var in io.Reader = os.Stdin
	switch {
	case len(args) > 1:
		return usageError("kube takes one file at most")
	case len(args) == 1 && args[0] != "-":
		f, err := os.Open(args[0])
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := monitoringv1.AddToScheme(scheme); err != nil {
		return err
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	docs := []kubeDocument{}
	var problems []string
	for i := 0; ; i++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if isEmptyDocument(raw) {
			continue
		}
		obj, gvk, err := decoder.Decode(raw, nil, nil)
		if err != nil {
			problems = append(problems, fmt.Sprintf("document %d (%s): %v", i, sourceOf(raw), err))
			continue
		}
		name := ""
		if m, ok := obj.(interface{ GetName() string }); ok {
			name = m.GetName()
		}
		asJSON, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return err
		}
		docs = append(docs, kubeDocument{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: name, Object: asJSON})
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	if len(docs) == 0 {
		return errors.New("no Kubernetes object found")
	}
	enc := json.NewEncoder(out)
	return enc.Encode(docs)
}

// isEmptyDocument: helm emits documents that hold only a `# Source:` comment for templates whose
// condition is off.
func isEmptyDocument(raw []byte) bool {
	for _, line := range bytes.Split(raw, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("---")) {
			return false
		}
	}
	return true
}

// sourceOf names the template a document came from (helm's `# Source:` line), for the message.
func sourceOf(raw []byte) string {
	for _, line := range bytes.Split(raw, []byte("\n")) {
		t := strings.TrimSpace(string(line))
		if strings.HasPrefix(t, "# Source: ") {
			return strings.TrimPrefix(t, "# Source: ")
		}
	}
	return "no source line"
}
