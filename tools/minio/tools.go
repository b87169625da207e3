//go:build tools

// Package tools pins the MinIO server used by the integration tests. It is a
// separate module so that MinIO's dependency tree never enters pqsink's go.mod.
package tools

import _ "github.com/minio/minio"
