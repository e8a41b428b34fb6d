// Command otelcol is an OpenTelemetry Collector built from the collector's
// own Go modules for sonde's tests: the OTLP receiver (profiles need the
// service.profilesSupport feature gate) and a "jsonfile" exporter that
// appends every batch of profiles it gets, as OTLP JSON, one line each, to
// a file the test reads. It is a separate module so sonde's go.mod does not
// gain the collector's dependencies.
package main

import (
	"context"
	"fmt"
	"os"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/exporter/xexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func main() {
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol", Description: "collector for sonde's tests", Version: "test"},
		Factories: factories,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory()}, DefaultScheme: "file",
		}},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func factories() (otelcol.Factories, error) {
	var f otelcol.Factories
	var err error
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
		return f, err
	}
	if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](debugexporter.NewFactory(), newJSONFileFactory()); err != nil {
		return f, err
	}
	f.Telemetry = otelconftelemetry.NewFactory()
	return f, nil
}

type jsonFileConfig struct {
	Path string `mapstructure:"path"`
}

func newJSONFileFactory() xexporter.Factory {
	return xexporter.NewFactory(component.MustNewType("jsonfile"),
		func() component.Config { return &jsonFileConfig{} },
		xexporter.WithProfiles(func(_ context.Context, _ exporter.Settings, cfg component.Config) (xexporter.Profiles, error) {
			return &jsonFile{path: cfg.(*jsonFileConfig).Path}, nil
		}, component.StabilityLevelDevelopment))
}

// jsonFile writes each batch as one line of OTLP JSON.
type jsonFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

func (j *jsonFile) Start(context.Context, component.Host) (err error) {
	j.f, err = os.OpenFile(j.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	return err
}

func (j *jsonFile) Shutdown(context.Context) error {
	if j.f == nil {
		return nil
	}
	return j.f.Close()
}

func (j *jsonFile) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (j *jsonFile) ConsumeProfiles(_ context.Context, p pprofile.Profiles) error {
	var m pprofile.JSONMarshaler
	b, err := m.MarshalProfiles(p)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, err = j.f.Write(append(b, '\n'))
	return err
}
