package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/reports"
)

// version is set at build time with -ldflags "-X main.version=..." (the
// Dockerfile and .goreleaser.yaml do); it wins over the build info.
var version = ""

func init() {
	rootCmd.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the idemcheck version, VCS revision and commit time",
		Long: `Print the version (set at release build time, else the module version go install
recorded), the VCS revision with +dirty for uncommitted changes, the commit time and the Go
version, as the binary's build info holds them.`,
		Example: "  idemcheck version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi, _ := debug.ReadBuildInfo()
			fmt.Fprintln(cmd.OutOrStdout(), versionLine(version, bi))
			return nil
		},
	})
}

// versionLine formats "idemcheck VERSION (revision REV[+dirty], committed
// TIME, GOVERSION)", leaving out what bi lacks (nil bi: no build info).
// ldflags wins over the module version; a checkout built with go build
// has module version "(devel)" (or none), printed as "dev".
func versionLine(ldflags string, bi *debug.BuildInfo) string {
	v := toolVersion(ldflags, bi)
	if bi == nil {
		return "idemcheck " + v
	}
	rev, at, dirty := vcsInfo(bi)
	var parts []string
	if rev != "" {
		rev = rev[:min(12, len(rev))]
		if dirty {
			rev += "+dirty"
		}
		parts = append(parts, "revision "+rev)
	}
	if at != "" {
		parts = append(parts, "committed "+at)
	}
	if bi.GoVersion != "" {
		parts = append(parts, bi.GoVersion)
	}
	if len(parts) == 0 {
		return "idemcheck " + v
	}
	return fmt.Sprintf("idemcheck %s (%s)", v, strings.Join(parts, ", "))
}

// toolVersion is the version a build reports: ldflags, else the module
// version go install recorded, else "dev".
func toolVersion(ldflags string, bi *debug.BuildInfo) string {
	v := ldflags
	if v == "" && bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	if v == "" {
		v = "dev"
	}
	return v
}

// vcsInfo is the build's VCS revision, commit time and whether the tree
// had uncommitted changes.
func vcsInfo(bi *debug.BuildInfo) (rev, at string, dirty bool) {
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	return rev, at, dirty
}

// toolInfo is this build as an attestation names it.
func toolInfo() reports.Tool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return reports.Tool{Version: toolVersion(version, nil)}
	}
	rev, _, dirty := vcsInfo(bi)
	if dirty {
		rev += "+dirty"
	}
	return reports.Tool{Version: toolVersion(version, bi), Revision: rev, GoVersion: bi.GoVersion}
}
