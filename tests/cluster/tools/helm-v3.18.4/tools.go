//go:build tools

// Package tools pins helm v3.18.4, the last helm v3 release whose values-schema validator
// (xeipuuv/gojsonschema v1.2.0, drafts 4/6/7) cannot read a JSON Schema draft 2020-12 schema with
// bundled $id/$defs/$ref. Tests use it as the "too old helm on PATH" the role must refuse.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
