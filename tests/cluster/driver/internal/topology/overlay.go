// overlay.go owns main's --sysfs-overlay: a YAML map "/sys/<path>": "<contents>" whose files
// replace or add to the host sysfs. A reduced port of upstream pkg/sysfs/overlay.go
// (NewOverlayFromFile, parseOverlay, overlayName): same parsing and path checks; reads and
// directory listings see the overlaid files (upstream's NUMA-entry validation is not ported).
package topology

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"testing/fstest"

	"sigs.k8s.io/yaml"
)

// WithOverlay returns base with the overlay file applied (base itself when filename is "").
func WithOverlay(base fs.FS, filename string) (fs.FS, error) {
	return WithOverlayRead(base, filename, os.ReadFile)
}

// WithOverlayRead is WithOverlay reading the file through readFile (the publish mode of simulated
// nodes: the files the kubelet mounted into the driver container).
func WithOverlayRead(base fs.FS, filename string, readFile func(string) ([]byte, error)) (fs.FS, error) {
	if filename == "" {
		return base, nil
	}
	data, err := readFile(filename)
	if err != nil {
		return nil, fmt.Errorf("read sysfs overlay: %w", err)
	}
	raw := map[string]any{}
	if err := yaml.UnmarshalStrict(data, &raw); err != nil {
		return nil, fmt.Errorf("create sysfs overlay: parse sysfs overlay: %w", err)
	}
	files := fstest.MapFS{}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, full := range keys {
		contents, ok := raw[full].(string)
		if !ok {
			return nil, fmt.Errorf("create sysfs overlay: parse sysfs overlay: value for %q must be a string", full)
		}
		if !strings.HasPrefix(full, "/sys/") {
			return nil, fmt.Errorf("create sysfs overlay: sysfs overlay path %q must be beneath /sys", full)
		}
		if path.Clean(full) != full {
			return nil, fmt.Errorf("create sysfs overlay: sysfs overlay path %q is not clean", full)
		}
		name := strings.TrimPrefix(full, "/sys/")
		if !fs.ValidPath(name) {
			return nil, fmt.Errorf("create sysfs overlay: invalid sysfs overlay path %q", full)
		}
		files[name] = &fstest.MapFile{Data: []byte(contents), Mode: 0o444}
	}
	return &overlayFS{base: base, files: files}, nil
}

type overlayFS struct {
	base  fs.FS
	files fstest.MapFS
}

func (o *overlayFS) Open(name string) (fs.File, error) {
	if _, ok := o.files[name]; ok {
		return o.files.Open(name)
	}
	return o.base.Open(name)
}

func (o *overlayFS) ReadDir(name string) ([]fs.DirEntry, error) {
	byName := map[string]fs.DirEntry{}
	baseEntries, baseErr := fs.ReadDir(o.base, name)
	for _, e := range baseEntries {
		byName[e.Name()] = e
	}
	extra, extraErr := fs.ReadDir(o.files, name)
	for _, e := range extra {
		byName[e.Name()] = e
	}
	if baseErr != nil && extraErr != nil {
		return nil, baseErr
	}
	out := make([]fs.DirEntry, 0, len(byName))
	for _, e := range byName {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}
