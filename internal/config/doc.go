// Package config is coderunner's one typed configuration.
//
// A Config comes from Default, then the YAML file (coderunner_config.yaml:
// sections docker, limits, languages, security, server, backend,
// control_plane and sessions; see
// testdata/coderunner_config.yaml for a documented example), then the
// environment, then Validate. Every value of every section except
// languages is also settable by an environment variable named
// CODERUNNER_<SECTION>_<KEY> in upper case, nested keys joined by "_"
// (limits.run.timeout is CODERUNNER_LIMITS_RUN_TIMEOUT). The variables
// /execute deployments already set keep their names: INTERNAL_API_TOKEN,
// CONTROL_PLANE_URL, CONTAINER_ID, POD_NAME and RESULTS_DIR; so do
// CODERUNNER_API_TOKEN, CODERUNNER_BACKEND and CODERUNNER_LOG_LEVEL. When
// both a CODERUNNER_ name and one of those is set, the CODERUNNER_ name
// wins.
//
// Decoding is strict: an unknown key is an error naming it. Secrets are of
// type Secret, which never prints, logs or marshals its value.
package config
