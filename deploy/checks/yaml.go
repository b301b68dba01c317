package main

import (
	"io"
	"os"

	"sigs.k8s.io/yaml"
)

// yamlCommand prints a YAML file (one document) as JSON, for checks written in other languages.
func yamlCommand(args []string, out io.Writer) error {
	if len(args) != 1 {
		return usageError("yaml2json takes one file")
	}
	raw, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	asJSON, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return err
	}
	_, err = out.Write(append(asJSON, '\n'))
	return err
}
