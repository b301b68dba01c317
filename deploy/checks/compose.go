package main

import (
	"context"
	"flag"
	"io"
	"path/filepath"

	"github.com/compose-spec/compose-go/v2/cli"
)

type multiFlag []string

func (m *multiFlag) String() string     { return "" }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// composeCommand loads the project the way `docker compose config` does. The process environment
// is deliberately not consulted: the result depends on the files given only, so CI is reproducible.
func composeCommand(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("compose", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var envFiles, profiles multiFlag
	fs.Var(&envFiles, "env-file", "file of variables for interpolation (repeatable)")
	fs.Var(&profiles, "profile", "profile to enable (repeatable; default COMPOSE_PROFILES of the env files)")
	projectDir := fs.String("project-dir", "", "project directory (default: the first file's directory)")
	name := fs.String("project-name", "dris", "project name")
	if err := fs.Parse(args); err != nil {
		return usageError(err.Error())
	}
	files := fs.Args()
	if len(files) == 0 {
		return usageError("compose needs at least one file")
	}
	dir := *projectDir
	if dir == "" {
		dir = filepath.Dir(files[0])
	}
	opts, err := cli.NewProjectOptions(files,
		cli.WithWorkingDirectory(dir),
		cli.WithName(*name),
		cli.WithEnvFiles(envFiles...),
		cli.WithDotEnv,
		cli.WithDefaultProfiles(profiles...),
		cli.WithInterpolation(true),
		cli.WithConsistency(true),
	)
	if err != nil {
		return err
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		return err
	}
	b, err := project.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = out.Write(append(b, '\n'))
	return err
}
