// cfgfile.go owns reading main's config file: strict YAML (a key set twice fails), apiVersion,
// exact spelling of keys, and the keys refused in the file. Mirrors upstream
// internal/driverconfig/cfgfile.go buildConfMap and schema.go schemaExcludedFields (and
// the simulator's former sim_config.py parse_config_file).
package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// excludedFields is upstream schema.go schemaExcludedFields.
var excludedFields = map[string]string{
	"bindAddress":     "use helm chart's healthzPort instead",
	"exposePCIeRoots": "use args.exposePCIeRoots instead",
	"kubeletRootDir":  "use the chart's top-level kubeletRootDir value, or --kubelet-root-dir when running the binary directly",
}

// canonicalKeys are Config's json names plus apiVersion (upstream canonicalConfigKeys).
func canonicalKeys() []string {
	keys := []string{"apiVersion"}
	t := reflect.TypeFor[Config]()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	sort.Strings(keys)
	return keys
}

// BuildConfMap loads the file and returns the map to apply, or upstream's error.
func BuildConfMap(path string) (map[string]any, error) { return BuildConfMapWith(path, os.ReadFile) }

// BuildConfMapWith is BuildConfMap reading the file through readFile.
func BuildConfMapWith(path string, readFile func(string) ([]byte, error)) (map[string]any, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return ParseConfMap(path, data)
}

// ParseConfMap is BuildConfMap on bytes already read.
func ParseConfMap(path string, data []byte) (map[string]any, error) {
	m := map[string]any{}
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	if raw, ok := m["apiVersion"]; ok {
		v, _ := raw.(string)
		if v != ConfigAPIVersion {
			return nil, fmt.Errorf("unsupported apiVersion %q, want %q", v, ConfigAPIVersion)
		}
	}
	delete(m, "apiVersion")
	if err := rejectNonCanonicalKeys(m); err != nil {
		return nil, err
	}
	excluded := make([]string, 0, len(excludedFields))
	for k := range excludedFields {
		excluded = append(excluded, k)
	}
	sort.Strings(excluded)
	for _, k := range excluded {
		if _, ok := m[k]; ok {
			return nil, fmt.Errorf("field %q is not configurable via the config file; %s", k, excludedFields[k])
		}
	}
	return m, nil
}

func rejectNonCanonicalKeys(m map[string]any) error {
	canonical := canonicalKeys()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var problems []string
	for _, key := range keys {
		if contains(canonical, key) {
			continue
		}
		for _, want := range canonical {
			if !strings.EqualFold(key, want) {
				continue
			}
			if alt, ok := excludedFields[want]; ok {
				problems = append(problems, fmt.Sprintf("field %q is not configurable via the config file; %s", key, alt))
			} else {
				problems = append(problems, fmt.Sprintf("field %q is spelled differently from the schema; use %q", key, want))
			}
			break
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
