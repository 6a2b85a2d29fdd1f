// Command otelcol is an OpenTelemetry Collector built from the Collector's
// own modules, for gprof's end-to-end tests of 'gprof push' (e2e/otlp_test.go):
// the OTLP receiver, whose OTLP/HTTP endpoint takes profiles when the
// service.profilesSupport feature gate is on, and the file exporter, which
// writes what the pipeline received as OTLP JSON for the tests to read.
//
// 'otelcol decode' reads a profiles request on standard input, protobuf or
// OTLP JSON, with the Collector's own code (pdata) and writes it as OTLP
// JSON: the tests read what gprof writes through it.
//
// The OTLP/HTTP exporter is there for the Collector configuration that
// docs/otlp.md shows, which the tests check with 'otelcol validate'.
//
// It is a module of its own, so that none of this is in gprof's go.mod;
// the tests build it once (go build -mod=mod) and keep the binary in the
// user's cache directory.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func factories() (otelcol.Factories, error) {
	f := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
	var err error
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
		return f, err
	}
	f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](fileexporter.NewFactory(), otlphttpexporter.NewFactory())
	return f, err
}

func decode() error {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	var p pprofile.Profiles
	if t := bytes.TrimSpace(in); len(t) > 0 && t[0] == '{' {
		p, err = (&pprofile.JSONUnmarshaler{}).UnmarshalProfiles(in)
	} else {
		p, err = (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(in)
	}
	if err != nil {
		return err
	}
	out, err := (&pprofile.JSONMarshaler{}).MarshalProfiles(p)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(out)
	return err
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "decode" {
		if err := decode(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol", Description: "a Collector for gprof's tests", Version: "test"},
		Factories: factories,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
				DefaultScheme:     "env",
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
