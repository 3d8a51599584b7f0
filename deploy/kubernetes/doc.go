// Package kubernetes holds coderunner's Kubernetes manifests (a
// kustomization: kubectl apply -k deploy/kubernetes) and the tests that
// decode them strictly into the Kubernetes API types and check what the
// executor relies on: probes, the grace period, least privilege, tokens
// from a Secret, the autoscaler's metric, selectors and network policy.
// It has no Go API.
package kubernetes
