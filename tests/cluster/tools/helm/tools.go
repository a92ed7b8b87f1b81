//go:build tools

// Package tools pins the helm v3 command the test cluster builds.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
