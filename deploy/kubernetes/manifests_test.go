package kubernetes_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func ptr[T any](v T) *T { return &v }

// TestManifests holds every invariant on the manifests as they are.
func TestManifests(t *testing.T) {
	s := load(t)
	names := make([]string, 0, len(checks))
	for name := range checks {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if err := checks[name](s); err != nil {
				t.Error(err)
			}
		})
	}
}

// mutation breaks one invariant of the manifests.
type mutation struct {
	name   string
	check  string
	mutate func(t *testing.T, s *set)
}

// executor is the executor container of s.
func executor(t *testing.T, s *set) *corev1.Container {
	t.Helper()
	c, err := s.container()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// setEnv replaces the variable name of the executor container.
func setEnv(t *testing.T, s *set, e corev1.EnvVar) {
	t.Helper()
	c := executor(t, s)
	for i := range c.Env {
		if c.Env[i].Name == e.Name {
			c.Env[i] = e
			return
		}
	}
	t.Fatalf("no variable %s", e.Name)
}

// dropEnv removes the variable name of the executor container.
func dropEnv(t *testing.T, s *set, name string) {
	t.Helper()
	c := executor(t, s)
	n := len(c.Env)
	c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
	if len(c.Env) == n {
		t.Fatalf("no variable %s", name)
	}
}

// editConfig replaces old with new in config.yaml.
func editConfig(t *testing.T, s *set, old, new string) {
	t.Helper()
	if !bytes.Contains(s.files["config.yaml"], []byte(old)) {
		t.Fatalf("config.yaml has no %q", old)
	}
	s.files["config.yaml"] = bytes.Replace(s.files["config.yaml"], []byte(old), []byte(new), 1)
}

// mutations: each is a broken manifest that its check must catch.
var mutations = []mutation{
	// kustomization
	{"kustomization of another kind", "kustomization", func(_ *testing.T, s *set) { s.kust.Kind = "Component" }},
	{"object in another namespace", "kustomization", func(_ *testing.T, s *set) { s.svc.Namespace = "default" }},
	{"secret example in another namespace", "kustomization", func(_ *testing.T, s *set) { s.secret.Namespace = "default" }},
	{"ConfigMap not generated", "kustomization", func(_ *testing.T, s *set) { s.kust.ConfigMapGenerator[0].Name = "other" }},

	// probes
	{"readiness on another path", "probes", func(t *testing.T, s *set) { executor(t, s).ReadinessProbe.HTTPGet.Path = "/healthz" }},
	{"liveness on another port", "probes", func(t *testing.T, s *set) {
		executor(t, s).LivenessProbe.HTTPGet.Port = intstr.FromInt32(9090)
	}},
	{"liveness on an unknown port name", "probes", func(t *testing.T, s *set) {
		executor(t, s).LivenessProbe.HTTPGet.Port = intstr.FromString("metrics")
	}},
	{"no startup probe", "probes", func(t *testing.T, s *set) { executor(t, s).StartupProbe = nil }},
	{"liveness by command", "probes", func(t *testing.T, s *set) {
		executor(t, s).LivenessProbe.ProbeHandler = corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
	}},
	{"readiness over HTTPS", "probes", func(t *testing.T, s *set) { executor(t, s).ReadinessProbe.HTTPGet.Scheme = corev1.URISchemeHTTPS }},
	{"executor listens elsewhere", "probes", func(t *testing.T, s *set) { editConfig(t, s, `addr: ":8080"`, `addr: ":9000"`) }},
	{"service targets another port", "probes", func(_ *testing.T, s *set) { s.svc.Spec.Ports[0].TargetPort = intstr.FromInt32(80) }},

	{"liveness restart waits for the drain", "probes", func(t *testing.T, s *set) {
		executor(t, s).LivenessProbe.TerminationGracePeriodSeconds = nil
	}},
	{"startup restart waits an hour", "probes", func(t *testing.T, s *set) {
		executor(t, s).StartupProbe.TerminationGracePeriodSeconds = ptr[int64](3680)
	}},

	// grace
	{"grace period of an hour", "grace", func(_ *testing.T, s *set) { s.dep.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr[int64](3600) }},
	{"no grace period", "grace", func(_ *testing.T, s *set) { s.dep.Spec.Template.Spec.TerminationGracePeriodSeconds = nil }},
	{"preStop shorter than the longest execution", "grace", func(t *testing.T, s *set) {
		executor(t, s).Lifecycle.PreStop.Exec.Command[2] = "600"
	}},
	{"no preStop", "grace", func(t *testing.T, s *set) { executor(t, s).Lifecycle = nil }},
	{"preStop on another port", "grace", func(t *testing.T, s *set) { executor(t, s).Lifecycle.PreStop.Exec.Command[3] = "9999" }},
	{"preStop script not mounted", "grace", func(t *testing.T, s *set) {
		executor(t, s).Lifecycle.PreStop.Exec.Command[1] = "/usr/local/bin/drain.sh"
	}},
	{"preStop bound not a number", "grace", func(t *testing.T, s *set) { executor(t, s).Lifecycle.PreStop.Exec.Command[2] = "1h" }},
	{"longer shutdown configured", "grace", func(t *testing.T, s *set) {
		editConfig(t, s, "  log_level: info\n", "  log_level: info\n  shutdown_timeout: 10m\n")
	}},
	{"longer compile step configured", "grace", func(t *testing.T, s *set) {
		editConfig(t, s, "control_plane:\n", "limits:\n  total_timeout_ms: 3600000\n  compile:\n    timeout: 10m\ncontrol_plane:\n")
	}},

	// privilege
	{"privileged", "privilege", func(t *testing.T, s *set) { executor(t, s).SecurityContext.Privileged = ptr(true) }},
	{"privilege escalation", "privilege", func(t *testing.T, s *set) { executor(t, s).SecurityContext.AllowPrivilegeEscalation = ptr(true) }},
	{"privilege escalation unset", "privilege", func(t *testing.T, s *set) { executor(t, s).SecurityContext.AllowPrivilegeEscalation = nil }},
	{"root allowed", "privilege", func(_ *testing.T, s *set) { s.dep.Spec.Template.Spec.SecurityContext.RunAsNonRoot = ptr(false) }},
	{"runs as uid 0", "privilege", func(t *testing.T, s *set) { executor(t, s).SecurityContext.RunAsUser = ptr[int64](0) }},
	{"runs as gid 0", "privilege", func(_ *testing.T, s *set) { s.dep.Spec.Template.Spec.SecurityContext.RunAsGroup = ptr[int64](0) }},
	{"SYS_ADMIN added", "privilege", func(t *testing.T, s *set) {
		executor(t, s).SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
	}},
	{"capabilities kept", "privilege", func(t *testing.T, s *set) { executor(t, s).SecurityContext.Capabilities.Drop = nil }},
	{"seccomp unconfined", "privilege", func(t *testing.T, s *set) {
		executor(t, s).SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	}},
	{"seccomp of another file", "privilege", func(_ *testing.T, s *set) {
		s.dep.Spec.Template.Spec.SecurityContext.SeccompProfile.LocalhostProfile = ptr("other.json")
	}},
	{"writable root", "privilege", func(t *testing.T, s *set) { executor(t, s).SecurityContext.ReadOnlyRootFilesystem = ptr(false) }},
	{"host users", "privilege", func(_ *testing.T, s *set) { s.dep.Spec.Template.Spec.HostUsers = nil }},
	{"host network", "privilege", func(_ *testing.T, s *set) { s.dep.Spec.Template.Spec.HostNetwork = true }},
	{"host PID", "privilege", func(_ *testing.T, s *set) { s.dep.Spec.Template.Spec.HostPID = true }},
	{"host path", "privilege", func(_ *testing.T, s *set) {
		s.dep.Spec.Template.Spec.Volumes = append(s.dep.Spec.Template.Spec.Volumes, corev1.Volume{Name: "host",
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
	}},
	{"host port", "privilege", func(t *testing.T, s *set) { executor(t, s).Ports[0].HostPort = 8080 }},
	{"service account token", "privilege", func(_ *testing.T, s *set) { s.dep.Spec.Template.Spec.AutomountServiceAccountToken = nil }},
	{"service links", "privilege", func(_ *testing.T, s *set) { s.dep.Spec.Template.Spec.EnableServiceLinks = ptr(true) }},
	{"privileged init container", "privilege", func(t *testing.T, s *set) {
		c := executor(t, s).DeepCopy()
		c.Name = "init"
		c.SecurityContext.Privileged = ptr(true)
		s.dep.Spec.Template.Spec.InitContainers = []corev1.Container{*c}
	}},
	{"no security context", "privilege", func(t *testing.T, s *set) { executor(t, s).SecurityContext = nil }},

	// secrets
	{"internal token literal", "secrets", func(t *testing.T, s *set) {
		setEnv(t, s, corev1.EnvVar{Name: "INTERNAL_API_TOKEN", Value: "abc"})
	}},
	{"API token from a ConfigMap", "secrets", func(t *testing.T, s *set) {
		setEnv(t, s, corev1.EnvVar{Name: "CODERUNNER_API_TOKEN", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "coderunner-config"}, Key: "token"}}})
	}},
	{"API token missing", "secrets", func(t *testing.T, s *set) { dropEnv(t, s, "CODERUNNER_API_TOKEN") }},
	{"optional token", "secrets", func(t *testing.T, s *set) {
		env(executor(t, s), "INTERNAL_API_TOKEN").ValueFrom.SecretKeyRef.Optional = ptr(true)
	}},
	{"token from another Secret", "secrets", func(t *testing.T, s *set) {
		env(executor(t, s), "INTERNAL_API_TOKEN").ValueFrom.SecretKeyRef.Name = "other"
	}},
	{"token key missing from the Secret", "secrets", func(t *testing.T, s *set) {
		env(executor(t, s), "INTERNAL_API_TOKEN").ValueFrom.SecretKeyRef.Key = "nope"
	}},
	{"another secret variable as literal", "secrets", func(t *testing.T, s *set) {
		c := executor(t, s)
		c.Env = append(c.Env, corev1.EnvVar{Name: "AWS_SECRET_ACCESS_KEY", Value: "x"})
	}},
	{"envFrom", "secrets", func(t *testing.T, s *set) {
		executor(t, s).EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "coderunner-tokens"}}}}
	}},
	{"example with a real-looking value", "secrets", func(_ *testing.T, s *set) { s.secret.StringData["api-token"] = "8f14e45fceea167a" }},
	{"example with data", "secrets", func(_ *testing.T, s *set) { s.secret.Data = map[string][]byte{"api-token": []byte("x")} }},
	{"token in config.yaml", "secrets", func(t *testing.T, s *set) {
		editConfig(t, s, "  log_level: info\n", "  log_level: info\n  api_token: abc\n")
	}},
	{"control plane token in config.yaml", "secrets", func(t *testing.T, s *set) {
		editConfig(t, s, "control_plane:\n", "control_plane:\n  token: abc\n")
	}},

	// environment
	{"POD_NAME missing", "environment", func(t *testing.T, s *set) { dropEnv(t, s, "POD_NAME") }},
	{"CONTAINER_ID literal", "environment", func(t *testing.T, s *set) { setEnv(t, s, corev1.EnvVar{Name: "CONTAINER_ID", Value: "executor"}) }},
	{"CONTAINER_ID of the node", "environment", func(t *testing.T, s *set) {
		env(executor(t, s), "CONTAINER_ID").ValueFrom.FieldRef.FieldPath = "spec.nodeName"
	}},
	{"results on the root file system", "environment", func(t *testing.T, s *set) {
		setEnv(t, s, corev1.EnvVar{Name: "RESULTS_DIR", Value: "/var/results"})
	}},
	{"results on the read-only ConfigMap", "environment", func(t *testing.T, s *set) {
		setEnv(t, s, corev1.EnvVar{Name: "RESULTS_DIR", Value: "/etc/coderunner/results"})
	}},
	{"RESULTS_DIR unset", "environment", func(t *testing.T, s *set) { dropEnv(t, s, "RESULTS_DIR") }},
	{"results mount read-only", "environment", func(t *testing.T, s *set) {
		for i := range executor(t, s).VolumeMounts {
			if m := &executor(t, s).VolumeMounts[i]; m.Name == "results" {
				m.ReadOnly = true
			}
		}
	}},
	{"compile cache on the root file system", "environment", func(t *testing.T, s *set) {
		setEnv(t, s, corev1.EnvVar{Name: "XDG_CACHE_HOME", Value: "/home/coderunner/.cache"})
	}},
	{"work dir on the root file system", "environment", func(t *testing.T, s *set) {
		editConfig(t, s, "work_dir: /tmp/coderunner", "work_dir: /var/lib/coderunner/work")
	}},
	{"misspelt opt-out", "environment", func(t *testing.T, s *set) {
		env(executor(t, s), "CODERUNNER_BACKEND_ALLOW_RLIMITS_ONLY").Name = "CODERUNNER_BACKEND_ALLOW_RLIMIT_ONLY"
	}},
	{"misspelt setting", "environment", func(t *testing.T, s *set) {
		c := executor(t, s)
		c.Env = append(c.Env, corev1.EnvVar{Name: "CODERUNNER_SERVER_MAX_CONCURENT", Value: "8"})
	}},
	{"config elsewhere", "environment", func(t *testing.T, s *set) {
		setEnv(t, s, corev1.EnvVar{Name: "CODERUNNER_CONFIG", Value: "/etc/coderunner.yaml"})
	}},
	{"no control plane", "environment", func(t *testing.T, s *set) {
		editConfig(t, s, `  url: "https://control-plane.control-plane.svc:8443"`, `  url: ""`)
	}},

	// autoscaler
	{"scales another Deployment", "autoscaler", func(_ *testing.T, s *set) { s.hpa.Spec.ScaleTargetRef.Name = "other" }},
	{"scales a StatefulSet", "autoscaler", func(_ *testing.T, s *set) { s.hpa.Spec.ScaleTargetRef.Kind = "StatefulSet" }},
	{"metric of another name", "autoscaler", func(_ *testing.T, s *set) { s.hpa.Spec.Metrics[1].Pods.Metric.Name = "queue_depth" }},
	{"no CPU metric", "autoscaler", func(_ *testing.T, s *set) { s.hpa.Spec.Metrics = s.hpa.Spec.Metrics[1:] }},
	{"no queue metric", "autoscaler", func(_ *testing.T, s *set) { s.hpa.Spec.Metrics = s.hpa.Spec.Metrics[:1] }},
	{"zero queue target", "autoscaler", func(_ *testing.T, s *set) {
		s.hpa.Spec.Metrics[1].Pods.Target.AverageValue = ptr(resource.MustParse("0"))
	}},
	{"minimum above maximum", "autoscaler", func(_ *testing.T, s *set) { s.hpa.Spec.MinReplicas = ptr[int32](30) }},
	{"executor without the metric", "autoscaler", func(_ *testing.T, s *set) { delete(s.metrics, queueMetric) }},

	// selectors
	{"service selects other pods", "selectors", func(_ *testing.T, s *set) { s.svc.Spec.Selector = map[string]string{"app": "other"} }},
	{"service selects nothing", "selectors", func(_ *testing.T, s *set) { s.svc.Spec.Selector = nil }},
	{"budget selects other pods", "selectors", func(_ *testing.T, s *set) {
		s.pdb.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/component": "other"}}
	}},
	{"policy selects other pods", "selectors", func(_ *testing.T, s *set) {
		s.np.Spec.PodSelector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	}},
	{"deployment selector mismatch", "selectors", func(_ *testing.T, s *set) {
		s.dep.Spec.Template.Labels = map[string]string{"app.kubernetes.io/name": "coderunner"}
	}},
	{"budget lets none go", "selectors", func(_ *testing.T, s *set) {
		s.pdb.Spec.MaxUnavailable = nil
		s.pdb.Spec.MinAvailable = ptr(intstr.FromInt32(2))
	}},
	{"budget of zero unavailable", "selectors", func(_ *testing.T, s *set) { s.pdb.Spec.MaxUnavailable = ptr(intstr.FromInt32(0)) }},

	// resources
	{"no memory limit", "resources", func(t *testing.T, s *set) { delete(executor(t, s).Resources.Limits, corev1.ResourceMemory) }},
	{"no CPU request", "resources", func(t *testing.T, s *set) { delete(executor(t, s).Resources.Requests, corev1.ResourceCPU) }},
	{"request above limit", "resources", func(t *testing.T, s *set) {
		executor(t, s).Resources.Requests[corev1.ResourceMemory] = resource.MustParse("8Gi")
	}},
	{"slots from the node's CPU count", "resources", func(t *testing.T, s *set) { editConfig(t, s, "  max_concurrent: 4\n", "") }},
	{"more slots than memory", "resources", func(t *testing.T, s *set) {
		editConfig(t, s, "  max_concurrent: 4\n", "  max_concurrent: 16\n")
	}},
	{"larger workspaces than memory", "resources", func(t *testing.T, s *set) {
		editConfig(t, s, "  name: auto\n", "  name: auto\n  workspace_size_mb: 2048\n")
	}},
	{"spool larger than its volume", "resources", func(t *testing.T, s *set) {
		editConfig(t, s, "control_plane:\n", "control_plane:\n  max_spool_mb: 1024\n")
	}},
	{"emptyDirs beyond the storage limit", "resources", func(t *testing.T, s *set) {
		executor(t, s).Resources.Limits[corev1.ResourceEphemeralStorage] = resource.MustParse("4Gi")
	}},
	{"emptyDir without a size", "resources", func(_ *testing.T, s *set) {
		for i := range s.dep.Spec.Template.Spec.Volumes {
			if v := &s.dep.Spec.Template.Spec.Volumes[i]; v.EmptyDir != nil {
				v.EmptyDir.SizeLimit = nil
			}
		}
	}},

	// network policy
	{"egress not restricted", "network policy", func(_ *testing.T, s *set) {
		s.np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	}},
	{"egress anywhere", "network policy", func(_ *testing.T, s *set) {
		s.np.Spec.Egress = append(s.np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{})
	}},
	{"egress to the internet", "network policy", func(_ *testing.T, s *set) {
		s.np.Spec.Egress[0].To = append(s.np.Spec.Egress[0].To, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}})
	}},
	{"egress to every pod", "network policy", func(_ *testing.T, s *set) {
		s.np.Spec.Egress[0].To = []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}
		s.np.Spec.Egress[0].Ports = append(s.np.Spec.Egress[0].Ports, networkingv1.NetworkPolicyPort{Port: ptr(intstr.FromInt32(22))})
	}},
	{"DNS port to the control plane", "network policy", func(_ *testing.T, s *set) {
		s.np.Spec.Egress[0].Ports = append(s.np.Spec.Egress[0].Ports, networkingv1.NetworkPolicyPort{Port: ptr(intstr.FromInt32(53))})
	}},
	{"egress port range", "network policy", func(_ *testing.T, s *set) { s.np.Spec.Egress[0].Ports[0].EndPort = ptr[int32](9000) }},
	{"egress on every port", "network policy", func(_ *testing.T, s *set) { s.np.Spec.Egress[0].Ports = nil }},
	{"no egress at all", "network policy", func(_ *testing.T, s *set) { s.np.Spec.Egress = nil }},
	{"ingress on another port", "network policy", func(_ *testing.T, s *set) {
		s.np.Spec.Ingress[0].Ports = append(s.np.Spec.Ingress[0].Ports, networkingv1.NetworkPolicyPort{Port: ptr(intstr.FromInt32(22))})
	}},
	{"ingress on every port", "network policy", func(_ *testing.T, s *set) { s.np.Spec.Ingress[0].Ports = nil }},
	{"control plane on another port", "network policy", func(t *testing.T, s *set) {
		editConfig(t, s, "control-plane.svc:8443", "control-plane.svc:9443")
	}},
	{"control plane on the default port", "network policy", func(t *testing.T, s *set) {
		editConfig(t, s, "control-plane.svc:8443", "control-plane.svc")
	}},
}

// TestChecksCatchBrokenManifests breaks each invariant in turn: its check
// must say so.
func TestChecksCatchBrokenManifests(t *testing.T) {
	metrics := servedMetrics(t)
	covered := map[string]bool{}
	for _, m := range mutations {
		t.Run(m.check+"/"+m.name, func(t *testing.T) {
			check, ok := checks[m.check]
			if !ok {
				t.Fatalf("no check %q", m.check)
			}
			s, err := loadDir(".")
			if err != nil {
				t.Fatal(err)
			}
			s.metrics = maps(metrics)
			if err := check(s); err != nil {
				t.Fatalf("fails before the mutation: %v", err)
			}
			m.mutate(t, s)
			err = check(s)
			if err == nil {
				t.Fatalf("%s: not caught", m.name)
			}
			t.Log(err)
		})
		covered[m.check] = true
	}
	for name := range checks {
		if !covered[name] {
			t.Errorf("check %q has no mutation that it must catch", name)
		}
	}
}

// maps copies a set of names.
func maps(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// copyDir copies this directory's files to a new directory.
func copyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDecodingIsStrict: a manifest the API server would read differently
// from what it says, or not at all, fails to load.
func TestDecodingIsStrict(t *testing.T) {
	for _, tc := range []struct {
		name, file, old, new string
	}{
		{"unknown field", "deployment.yaml", "  revisionHistoryLimit: 5\n", "  revisionHistoryLimit: 5\n  revisionHistory: 5\n"},
		{"field in another case", "deployment.yaml", "  revisionHistoryLimit: 5\n", "  RevisionHistoryLimit: 5\n"},
		{"duplicate field", "deployment.yaml", "  revisionHistoryLimit: 5\n", "  revisionHistoryLimit: 5\n  revisionHistoryLimit: 6\n"},
		{"misplaced field", "deployment.yaml", "      hostUsers: false\n", "      hostUsers: false\n      procMount: Unmasked\n"},
		{"wrong type", "service.yaml", "      port: 8080\n", "      port: eighty\n"},
		{"unknown kind", "pdb.yaml", "kind: PodDisruptionBudget", "kind: PodDisruptionBudgets"},
		{"unknown version", "hpa.yaml", "apiVersion: autoscaling/v2", "apiVersion: autoscaling/v3"},
		{"unknown field in the network policy", "networkpolicy.yaml", "  policyTypes:\n", "  egressDefault: deny\n  policyTypes:\n"},
		{"unknown field in the kustomization", kustomizationFile, "namespace: coderunner\n", "namespace: coderunner\nnamePrefix: x-\n"},
		{"duplicate key in the kustomization", kustomizationFile, "namespace: coderunner\n", "namespace: coderunner\nnamespace: other\n"},
		{"unknown field in the Secret example", secretExampleFile, "type: Opaque\n", "type: Opaque\nimmutible: true\n"},
		{"listed file missing", kustomizationFile, "  - pdb.yaml\n", "  - pdb.yaml\n  - missing.yaml\n"},
		{"manifest not listed", kustomizationFile, "  - pdb.yaml\n", ""},
		{"object without kind", "service.yaml", "kind: Service\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t)
			path := filepath.Join(dir, tc.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), tc.old) {
				t.Fatalf("%s has no %q", tc.file, tc.old)
			}
			if err := os.WriteFile(path, []byte(strings.Replace(string(data), tc.old, tc.new, 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := loadDir(dir); err == nil {
				t.Fatal("loaded")
			} else {
				t.Log(err)
			}
		})
	}
	t.Run("untouched copy loads", func(t *testing.T) {
		if _, err := loadDir(copyDir(t)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("stray manifest", func(t *testing.T) {
		dir := copyDir(t)
		if err := os.WriteFile(filepath.Join(dir, "extra.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadDir(dir); err == nil {
			t.Fatal("a manifest kubectl apply -k leaves out was accepted")
		}
	})
}

// TestUnknownObjectKindRefused: an object of a kind the checks do not
// cover is refused rather than applied unchecked.
func TestUnknownObjectKindRefused(t *testing.T) {
	dir := copyDir(t)
	extra := "---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: x\n  namespace: coderunner\n"
	f, err := os.OpenFile(filepath.Join(dir, "service.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(extra); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := loadDir(dir); err == nil {
		t.Fatal("a ServiceAccount was accepted")
	}
}
