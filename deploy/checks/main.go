// Command dris-deploy-check validates the deployment artefacts of deploy/ offline, with the
// libraries the tools themselves use, so that CI needs no Docker engine and no cluster:
//
//	dris-deploy-check compose [--env-file F]... [--profile P]... [--project-dir D] FILE...
//	    loads a Compose project as `docker compose config` does (compose-go: the Compose
//	    Specification's JSON schema embedded in the module, interpolation, consistency of
//	    services, networks, volumes, secrets and configs) and prints the resolved model as JSON.
//	dris-deploy-check kube [FILE|-]
//	    decodes every document of a multi-document manifest (e.g. `helm template` output) strictly
//	    into the Kubernetes API types of client-go and the Prometheus Operator (unknown or duplicate
//	    fields, wrong types and unknown kinds are errors) and prints the documents as a JSON array.
//	dris-deploy-check yaml2json FILE
//	    prints a one-document YAML file as JSON (duplicate keys are errors).
//
// Exit status: 0 valid, 1 invalid (reasons on stderr), 2 usage.
package main

import (
	"fmt"
	"os"
)

const usage = `usage:
  dris-deploy-check compose [--env-file F]... [--profile P]... [--project-dir D] FILE...
  dris-deploy-check kube [FILE|-]
  dris-deploy-check yaml2json FILE`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "compose":
		err = composeCommand(os.Args[2:], os.Stdout)
	case "kube":
		err = kubeCommand(os.Args[2:], os.Stdout)
	case "yaml2json":
		err = yamlCommand(os.Args[2:], os.Stdout)
	case "-h", "--help", "help":
		fmt.Fprintln(os.Stdout, usage)
		return
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		if ue, ok := err.(usageError); ok {
			fmt.Fprintf(os.Stderr, "dris-deploy-check: %s\n%s\n", string(ue), usage)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "dris-deploy-check: %v\n", err)
		os.Exit(1)
	}
}

type usageError string

func (e usageError) Error() string { return string(e) }
