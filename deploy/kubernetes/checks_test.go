package kubernetes_test

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/coderunner/coderunner/controlplane"
	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/httpapi"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/invoke"
	"github.com/coderunner/coderunner/judge"
)

// seccompProfile is deploy/seccomp.json's name on the nodes, beneath the
// kubelet's seccomp directory.
const seccompProfile = "coderunner-seccomp.json"

// queueMetric is the executor's gauge of requests waiting for a slot.
const queueMetric = "coderunner_queue_depth"

// Parts of the grace period that no code states.
const (
	// sandboxMargin covers starting and tearing down an execution's
	// sandbox and draining its output after a kill.
	sandboxMargin = 10 * time.Second
	// deliveryAttempts is how many calls a result gets before the pod
	// may go.
	deliveryAttempts = 4
	// stopMargin is the kubelet's and the runtime's time to stop the
	// container after the executor's shutdown.
	stopMargin = 10 * time.Second
	// maxProbeGrace bounds the restart of an executor that fails its
	// probes.
	maxProbeGrace = 5 * time.Minute
)

// check is one invariant of the manifests; it says what is wrong.
type check func(*set) error

// checks are the invariants, by name.
var checks = map[string]check{
	"kustomization":  checkKustomization,
	"probes":         checkProbes,
	"grace":          checkGrace,
	"privilege":      checkPrivilege,
	"secrets":        checkSecrets,
	"environment":    checkEnvironment,
	"autoscaler":     checkAutoscaler,
	"selectors":      checkSelectors,
	"resources":      checkResources,
	"network policy": checkNetworkPolicy,
}

// checkKustomization: the kustomization's kind, every object in its
// namespace, and the generated ConfigMap mounted by the pods.
func checkKustomization(s *set) error {
	k := s.kust
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		return fmt.Errorf("kustomization.yaml is %s %s, want kustomize.config.k8s.io/v1beta1 Kustomization", k.APIVersion, k.Kind)
	}
	if k.Namespace == "" || s.ns.Name != k.Namespace {
		return fmt.Errorf("the Namespace is %q and the kustomization's namespace %q", s.ns.Name, k.Namespace)
	}
	for _, o := range s.objectMeta() {
		if o.meta == metav1.Object(s.ns) {
			continue
		}
		if o.meta.GetNamespace() != k.Namespace {
			return fmt.Errorf("%s: %s is in namespace %q, want %q (kubectl apply -f would put it elsewhere)", o.file, o.meta.GetName(), o.meta.GetNamespace(), k.Namespace)
		}
	}
	if s.secret.Namespace != k.Namespace {
		return fmt.Errorf("%s: namespace %q, want %q", secretExampleFile, s.secret.Namespace, k.Namespace)
	}
	var cm *corev1.ConfigMapVolumeSource
	for _, v := range s.dep.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil {
			cm = v.ConfigMap
		}
	}
	if cm == nil {
		return errors.New("no ConfigMap volume: the configuration and the preStop hook are not mounted")
	}
	for _, g := range k.ConfigMapGenerator {
		if g.Name == cm.Name {
			return nil
		}
	}
	return fmt.Errorf("the pods mount ConfigMap %q, which the kustomization does not generate", cm.Name)
}

// containerPort is the executor's port: the one named http, which must be
// the port of server.addr.
func (s *set) containerPort() (int32, error) {
	c, err := s.container()
	if err != nil {
		return 0, err
	}
	cfg, err := s.config()
	if err != nil {
		return 0, err
	}
	_, p, err := net.SplitHostPort(cfg.Server.Addr)
	if err != nil {
		return 0, fmt.Errorf("server.addr %q: %w", cfg.Server.Addr, err)
	}
	listen, err := strconv.Atoi(p)
	if err != nil {
		return 0, fmt.Errorf("server.addr %q has no port number", cfg.Server.Addr)
	}
	for _, cp := range c.Ports {
		if cp.Name == "http" {
			if int(cp.ContainerPort) != listen || cp.Protocol != corev1.ProtocolTCP {
				return 0, fmt.Errorf("container port http is %s %d, and the executor listens on TCP %d (server.addr)", cp.Protocol, cp.ContainerPort, listen)
			}
			return cp.ContainerPort, nil
		}
	}
	return 0, errors.New("the container has no port named http")
}

// resolvePort turns a port by number or name into the container's number.
func resolvePort(c *corev1.Container, p intstr.IntOrString) int32 {
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	return -1
}

// checkProbes: startup, readiness and liveness all GET /health on the
// executor's port, and the Service sends traffic there.
func checkProbes(s *set) error {
	c, err := s.container()
	if err != nil {
		return err
	}
	port, err := s.containerPort()
	if err != nil {
		return err
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
	}{{"startupProbe", c.StartupProbe}, {"readinessProbe", c.ReadinessProbe}, {"livenessProbe", c.LivenessProbe}} {
		switch {
		case p.probe == nil:
			return fmt.Errorf("no %s", p.name)
		case p.probe.HTTPGet == nil:
			return fmt.Errorf("%s is not an HTTP GET", p.name)
		case p.probe.HTTPGet.Path != "/health":
			return fmt.Errorf("%s gets %q, want /health", p.name, p.probe.HTTPGet.Path)
		case resolvePort(c, p.probe.HTTPGet.Port) != port:
			return fmt.Errorf("%s asks port %s, the executor listens on %d", p.name, p.probe.HTTPGet.Port.String(), port)
		case p.probe.HTTPGet.Scheme != "" && p.probe.HTTPGet.Scheme != corev1.URISchemeHTTP:
			return fmt.Errorf("%s uses %s; the executor speaks HTTP", p.name, p.probe.HTTPGet.Scheme)
		}
	}
	// A probe that restarts the container has a short grace of its own:
	// with the pod's, the preStop hook would wait its whole bound on an
	// executor that does not answer.
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
	}{{"startupProbe", c.StartupProbe}, {"livenessProbe", c.LivenessProbe}} {
		g := p.probe.TerminationGracePeriodSeconds
		if g == nil || time.Duration(*g)*time.Second < httpapi.DefaultShutdownGrace+stopMargin || time.Duration(*g)*time.Second > maxProbeGrace {
			return fmt.Errorf("%s has no terminationGracePeriodSeconds between %v and %v", p.name, httpapi.DefaultShutdownGrace+stopMargin, maxProbeGrace)
		}
	}
	for _, sp := range s.svc.Spec.Ports {
		if resolvePort(c, sp.TargetPort) != port {
			return fmt.Errorf("Service port %s targets %s, the executor listens on %d", sp.Name, sp.TargetPort.String(), port)
		}
	}
	return nil
}

// longestExecution is the longest an execution the executor admits may
// run, from the code's bounds and the configuration's compile step.
func longestExecution(cfg *config.Config) time.Duration {
	compile := cfg.Limits.Compile.Timeout.Std()
	return max(
		invoke.MaxTimeout*time.Second,                                     // /execute
		execute.MaxTimeLimit*time.Second+compile,                          // /v1/run
		judge.MaxTotalTimeoutMS*time.Millisecond+compile,                  // /v1/judge
		time.Duration(cfg.Limits.TotalTimeoutMS)*time.Millisecond+compile, // the judge's configured default
	)
}

// deliveryTime is the time a result gets to reach the control plane:
// deliveryAttempts calls of at most the attempt timeout each, with the
// reporter's backoff between them.
func deliveryTime() time.Duration {
	d := deliveryAttempts * controlplane.DefaultAttemptTimeout
	for i := range deliveryAttempts - 1 {
		d += controlplane.DefaultBackoff[min(i, len(controlplane.DefaultBackoff)-1)]
	}
	return d
}

// preStop parses the container's preStop hook: bash running the mounted
// drain.sh with its bound in seconds and the executor's port.
func (s *set) preStop() (bound time.Duration, port int, err error) {
	c, err := s.container()
	if err != nil {
		return 0, 0, err
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Exec == nil {
		return 0, 0, errors.New("no preStop exec hook: SIGTERM would come at once and crash the running executions")
	}
	cmd := c.Lifecycle.PreStop.Exec.Command
	if len(cmd) != 4 || cmd[0] != "/bin/bash" {
		return 0, 0, fmt.Errorf("preStop runs %q, want /bin/bash DRAIN.SH SECONDS PORT", cmd)
	}
	if err := s.mountedFile(c, cmd[1], "drain.sh"); err != nil {
		return 0, 0, fmt.Errorf("preStop: %w", err)
	}
	secs, err := strconv.Atoi(cmd[2])
	if err != nil || secs <= 0 {
		return 0, 0, fmt.Errorf("preStop bound %q is not a number of seconds", cmd[2])
	}
	if port, err = strconv.Atoi(cmd[3]); err != nil {
		return 0, 0, fmt.Errorf("preStop port %q is not a number", cmd[3])
	}
	return time.Duration(secs) * time.Second, port, nil
}

// mountedFile checks that path is the generated ConfigMap's key name,
// mounted in c.
func (s *set) mountedFile(c *corev1.Container, path, key string) error {
	if _, ok := s.files[key]; !ok {
		return fmt.Errorf("%s is not a file of the generated ConfigMap", key)
	}
	for _, m := range c.VolumeMounts {
		for _, v := range s.dep.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil && m.SubPath == "" && filepath.Join(m.MountPath, key) == path {
				return nil
			}
		}
	}
	return fmt.Errorf("%s is not where the ConfigMap's %s is mounted", path, key)
}

// checkGrace: the preStop hook waits as long as the longest execution and
// the delivery of its result, and the grace period covers that and the
// executor's shutdown after SIGTERM.
func checkGrace(s *set) error {
	cfg, err := s.config()
	if err != nil {
		return err
	}
	bound, port, err := s.preStop()
	if err != nil {
		return err
	}
	want, err := s.containerPort()
	if err != nil {
		return err
	}
	if port != int(want) {
		return fmt.Errorf("preStop asks port %d, the executor listens on %d", port, want)
	}
	need := longestExecution(cfg) + sandboxMargin + deliveryTime()
	if bound < need {
		return fmt.Errorf("preStop waits at most %v, less than the longest execution and its delivery (%v)", bound, need)
	}
	shutdown := max(httpapi.DefaultShutdownGrace, cfg.Server.ShutdownTimeout.Std())
	g := s.dep.Spec.Template.Spec.TerminationGracePeriodSeconds
	if g == nil {
		return errors.New("no terminationGracePeriodSeconds: the default 30 s cuts executions short")
	}
	if grace := time.Duration(*g) * time.Second; grace < bound+shutdown+stopMargin {
		return fmt.Errorf("terminationGracePeriodSeconds %v < preStop %v + shutdown %v + %v", grace, bound, shutdown, stopMargin)
	}
	return nil
}

// allowedVolume reports whether a volume is of a kind the restricted Pod
// Security level allows (nothing of the node).
func allowedVolume(v corev1.Volume) bool {
	vs := v.VolumeSource
	return vs.EmptyDir != nil || vs.ConfigMap != nil || vs.Secret != nil || vs.DownwardAPI != nil ||
		vs.Projected != nil || vs.PersistentVolumeClaim != nil || vs.Ephemeral != nil
}

// checkPrivilege: the least privilege the sandbox can work with, and
// nothing more.
func checkPrivilege(s *set) error {
	pod := s.dep.Spec.Template.Spec
	switch {
	case pod.HostNetwork || pod.HostPID || pod.HostIPC:
		return errors.New("the pod shares a namespace of the node")
	case pod.HostUsers == nil || *pod.HostUsers:
		return errors.New("hostUsers is not false: the pod's uids would be the node's")
	case pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken:
		return errors.New("automountServiceAccountToken is not false: the executor needs no API token")
	case pod.EnableServiceLinks == nil || *pod.EnableServiceLinks:
		return errors.New("enableServiceLinks is not false: Service variables would share the CODERUNNER_ prefix")
	}
	for _, v := range pod.Volumes {
		if !allowedVolume(v) {
			return fmt.Errorf("volume %s reaches into the node", v.Name)
		}
	}
	psc := pod.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	all := append(slices.Clone(pod.InitContainers), pod.Containers...)
	for i := range all {
		if err := checkContainerPrivilege(&all[i], psc); err != nil {
			return fmt.Errorf("container %s: %w", all[i].Name, err)
		}
	}
	return nil
}

func checkContainerPrivilege(c *corev1.Container, psc *corev1.PodSecurityContext) error {
	sc := c.SecurityContext
	if sc == nil {
		return errors.New("no securityContext")
	}
	nonRoot := sc.RunAsNonRoot
	if nonRoot == nil {
		nonRoot = psc.RunAsNonRoot
	}
	uid, gid := sc.RunAsUser, sc.RunAsGroup
	if uid == nil {
		uid = psc.RunAsUser
	}
	if gid == nil {
		gid = psc.RunAsGroup
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil {
		seccomp = psc.SeccompProfile
	}
	switch {
	case sc.Privileged != nil && *sc.Privileged:
		return errors.New("privileged")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		return errors.New("allowPrivilegeEscalation is not false")
	case nonRoot == nil || !*nonRoot:
		return errors.New("runAsNonRoot is not true")
	case uid == nil || *uid == 0 || gid == nil || *gid == 0:
		return errors.New("no non-root runAsUser and runAsGroup")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		return errors.New("the root file system is writable")
	case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL"):
		return errors.New("capabilities are not all dropped")
	case len(sc.Capabilities.Add) > 0:
		return fmt.Errorf("capabilities %v added", sc.Capabilities.Add)
	case seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeLocalhost ||
		seccomp.LocalhostProfile == nil || *seccomp.LocalhostProfile != seccompProfile:
		return fmt.Errorf("the seccomp profile is not Localhost %s", seccompProfile)
	}
	for _, p := range c.Ports {
		if p.HostPort != 0 {
			return fmt.Errorf("host port %d", p.HostPort)
		}
	}
	return nil
}

// secretName reports whether a variable holds a credential by its name.
func secretName(name string) bool {
	for _, w := range []string{"TOKEN", "SECRET", "PASSWORD", "KEY"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// checkSecrets: tokens come from the Secret only, never from a literal or
// config.yaml, and the Secret example holds placeholders only.
func checkSecrets(s *set) error {
	c, err := s.container()
	if err != nil {
		return err
	}
	if len(c.EnvFrom) > 0 {
		return errors.New("envFrom: variables the manifests do not show, tokens included")
	}
	for _, e := range c.Env {
		ref := (*corev1.SecretKeySelector)(nil)
		if e.ValueFrom != nil {
			ref = e.ValueFrom.SecretKeyRef
		}
		switch {
		case secretName(e.Name) && ref == nil:
			return fmt.Errorf("%s is not read from a Secret", e.Name)
		case ref != nil && ref.Optional != nil && *ref.Optional:
			return fmt.Errorf("%s: an optional Secret key would start the pod without it", e.Name)
		case ref != nil && ref.Name != s.secret.Name:
			return fmt.Errorf("%s comes from Secret %s, not %s", e.Name, ref.Name, s.secret.Name)
		}
	}
	for _, name := range []string{"CODERUNNER_API_TOKEN", "INTERNAL_API_TOKEN"} {
		if e := env(c, name); e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			return fmt.Errorf("%s is not read from the Secret", name)
		}
	}
	if len(s.secret.Data) > 0 {
		return fmt.Errorf("%s has data: only placeholders belong there", secretExampleFile)
	}
	for k, v := range s.secret.StringData {
		if !strings.HasPrefix(v, "REPLACE") {
			return fmt.Errorf("%s: %s is not a placeholder (REPLACE...)", secretExampleFile, k)
		}
	}
	var doc map[string]map[string]any
	if err := yaml.Unmarshal(s.files["config.yaml"], &doc); err != nil {
		return fmt.Errorf("config.yaml: %w", err)
	}
	for _, key := range [][2]string{{"server", "api_token"}, {"control_plane", "token"}} {
		if _, ok := doc[key[0]][key[1]]; ok {
			return fmt.Errorf("config.yaml sets %s.%s: tokens belong in the Secret", key[0], key[1])
		}
	}
	cfg, err := s.config()
	if err != nil {
		return err
	}
	if len(cfg.Server.APITokens()) == 0 || cfg.ControlPlane.Token == "" {
		return errors.New("the executor would start without its API token or control plane token")
	}
	return nil
}

// writableMount is the mount path of a writable volume that path lies
// beneath, or "". An emptyDir or a claim outlives a restart of the
// container; the container's own file system does not.
func (s *set) writableMount(c *corev1.Container, path string) string {
	for _, m := range c.VolumeMounts {
		if m.ReadOnly || m.SubPath != "" || !beneath(path, m.MountPath) {
			continue
		}
		for _, v := range s.dep.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && (v.EmptyDir != nil || v.PersistentVolumeClaim != nil) {
				return m.MountPath
			}
		}
	}
	return ""
}

// checkEnvironment: the variables the executor reads from Kubernetes, and
// every directory it writes on a writable volume (the root file system is
// read-only), the results on one that outlives the container.
func checkEnvironment(s *set) error {
	c, err := s.container()
	if err != nil {
		return err
	}
	for name, field := range map[string][]string{
		"POD_NAME":     {"metadata.name"},
		"CONTAINER_ID": {"metadata.uid", "metadata.name"},
	} {
		e := env(c, name)
		if e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || !slices.Contains(field, e.ValueFrom.FieldRef.FieldPath) {
			return fmt.Errorf("%s is not the pod's %s from the downward API", name, field[0])
		}
	}
	if e := env(c, "CODERUNNER_CONFIG"); e == nil || e.ValueFrom != nil {
		return errors.New("CODERUNNER_CONFIG does not name the mounted config.yaml")
	} else if err := s.mountedFile(c, e.Value, "config.yaml"); err != nil {
		return fmt.Errorf("CODERUNNER_CONFIG: %w", err)
	}
	if err := s.checkVariablesRead(c); err != nil {
		return err
	}
	cfg, err := s.config()
	if err != nil {
		return err
	}
	if cfg.ControlPlane.URL == "" {
		return errors.New("control_plane.url is empty: nothing would be reported")
	}
	if e := env(c, "RESULTS_DIR"); e == nil || e.Value != cfg.ControlPlane.ResultsDir {
		return errors.New("RESULTS_DIR is not set in the pod")
	}
	if s.writableMount(c, cfg.ControlPlane.ResultsDir) == "" {
		return fmt.Errorf("RESULTS_DIR %s is not on a volume that outlives the container", cfg.ControlPlane.ResultsDir)
	}
	paths := map[string]string{"backend.work_dir": cfg.Backend.WorkDir, "XDG_CACHE_HOME": ""}
	if e := env(c, "XDG_CACHE_HOME"); e != nil {
		paths["XDG_CACHE_HOME"] = e.Value
	}
	for name, p := range paths {
		if p == "" || s.writableMount(c, p) == "" {
			return fmt.Errorf("%s %q is not on a writable volume, and the root file system is read-only", name, p)
		}
	}
	return nil
}

// checkAutoscaler: the autoscaler scales the Deployment, by CPU and by the
// executor's real queue depth metric.
func checkAutoscaler(s *set) error {
	h := s.hpa.Spec
	ref := h.ScaleTargetRef
	if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != s.dep.Name {
		return fmt.Errorf("the autoscaler scales %s %s %s, not the Deployment %s", ref.APIVersion, ref.Kind, ref.Name, s.dep.Name)
	}
	if h.MinReplicas == nil || *h.MinReplicas < 1 || *h.MinReplicas > h.MaxReplicas {
		return errors.New("minReplicas is not between 1 and maxReplicas")
	}
	cpu, queue := false, false
	for _, m := range h.Metrics {
		switch {
		case m.Resource != nil && m.Resource.Name == corev1.ResourceCPU:
			cpu = true
		case m.Pods != nil:
			if m.Pods.Metric.Name != queueMetric {
				return fmt.Errorf("the Pods metric %q is not the executor's %s", m.Pods.Metric.Name, queueMetric)
			}
			if !s.metrics[queueMetric] {
				return fmt.Errorf("the executor's /metrics has no %s", queueMetric)
			}
			queue = m.Pods.Target.AverageValue != nil && m.Pods.Target.AverageValue.Sign() > 0
		}
	}
	if !cpu || !queue {
		return fmt.Errorf("the autoscaler does not watch both CPU and %s (with a positive average)", queueMetric)
	}
	return nil
}

// checkSelectors: the Deployment, Service, PodDisruptionBudget and
// NetworkPolicy all select the executor's pods, and the budget lets one
// go at a time.
func checkSelectors(s *set) error {
	pods := labels.Set(s.labelsOf())
	sel, err := metav1.LabelSelectorAsSelector(s.dep.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(pods) {
		return errors.New("the Deployment's selector does not match its pods")
	}
	if len(s.svc.Spec.Selector) == 0 || !labels.SelectorFromSet(s.svc.Spec.Selector).Matches(pods) {
		return errors.New("the Service does not select the executor's pods")
	}
	for name, ls := range map[string]*metav1.LabelSelector{"PodDisruptionBudget": s.pdb.Spec.Selector, "NetworkPolicy": &s.np.Spec.PodSelector} {
		sel, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil || sel.Empty() || !sel.Matches(pods) {
			return fmt.Errorf("the %s does not select the executor's pods", name)
		}
	}
	b := s.pdb.Spec
	switch {
	case b.MaxUnavailable != nil && b.MinAvailable == nil:
		if b.MaxUnavailable.Type != intstr.Int || b.MaxUnavailable.IntVal < 1 {
			return errors.New("the budget's maxUnavailable lets no pod go")
		}
	case b.MinAvailable != nil && b.MaxUnavailable == nil:
		if b.MinAvailable.Type != intstr.Int || s.hpa.Spec.MinReplicas == nil || b.MinAvailable.IntVal >= *s.hpa.Spec.MinReplicas {
			return errors.New("the budget's minAvailable lets no pod go at the autoscaler's minimum")
		}
	default:
		return errors.New("the budget sets neither or both of minAvailable and maxUnavailable")
	}
	return nil
}

// emptyPeer reports whether a peer selects everything.
func emptyPeer(p networkingv1.NetworkPolicyPeer) bool {
	return p.IPBlock == nil && p.PodSelector == nil && p.NamespaceSelector == nil
}

// dnsPeer reports whether a peer is the cluster's DNS only.
func dnsPeer(p networkingv1.NetworkPolicyPeer) bool {
	return p.IPBlock == nil && p.PodSelector != nil && p.PodSelector.MatchLabels["k8s-app"] == "kube-dns" &&
		p.NamespaceSelector != nil && p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "kube-system"
}

// checkNetworkPolicy: ingress only on the executor's port; egress only to
// the control plane's port and to DNS.
func checkNetworkPolicy(s *set) error {
	np := s.np.Spec
	if !slices.Contains(np.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(np.PolicyTypes, networkingv1.PolicyTypeEgress) {
		return errors.New("the policy does not restrict both ingress and egress")
	}
	port, err := s.containerPort()
	if err != nil {
		return err
	}
	for _, r := range np.Ingress {
		if len(r.Ports) == 0 {
			return errors.New("an ingress rule allows every port")
		}
		for _, p := range r.Ports {
			if p.Port == nil || p.Port.IntValue() != int(port) || p.EndPort != nil {
				return fmt.Errorf("ingress allows port %v; only %d is served", p.Port, port)
			}
		}
	}
	cfg, err := s.config()
	if err != nil {
		return err
	}
	u, err := url.Parse(cfg.ControlPlane.URL)
	if err != nil {
		return err
	}
	cpPort := u.Port()
	if cpPort == "" {
		cpPort = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if len(np.Egress) == 0 {
		return errors.New("no egress rule: the control plane is unreachable")
	}
	toControlPlane := 0
	for _, r := range np.Egress {
		if len(r.To) == 0 || len(r.Ports) == 0 {
			return errors.New("an egress rule allows every destination or every port")
		}
		dns := true
		for _, p := range r.To {
			if emptyPeer(p) || p.IPBlock != nil {
				return errors.New("an egress rule reaches addresses beyond the control plane and DNS")
			}
			dns = dns && dnsPeer(p)
		}
		for _, p := range r.Ports {
			if p.Port == nil || p.EndPort != nil {
				return errors.New("an egress rule allows a range of ports")
			}
			switch {
			case dns && p.Port.IntValue() == 53:
			case !dns && p.Port.String() == cpPort && (p.Protocol == nil || *p.Protocol == corev1.ProtocolTCP):
				toControlPlane++
			default:
				return fmt.Errorf("egress allows port %s to a peer that is neither the control plane on port %s nor DNS", p.Port.String(), cpPort)
			}
		}
	}
	if toControlPlane != 1 {
		return fmt.Errorf("%d egress rules reach the control plane's port %s, want 1", toControlPlane, cpPort)
	}
	return nil
}

// quantity is a resource of a list, or nil.
func quantity(l corev1.ResourceList, name corev1.ResourceName) *resource.Quantity {
	q, ok := l[name]
	if !ok {
		return nil
	}
	return &q
}

// checkResources: requests and limits for CPU, memory and ephemeral
// storage; a fixed number of slots whose worst case fits in the memory
// limit; volumes that fit in the storage limit, the results' volume
// holding the whole spool.
func checkResources(s *set) error {
	c, err := s.container()
	if err != nil {
		return err
	}
	r := c.Resources
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		req, lim := quantity(r.Requests, name), quantity(r.Limits, name)
		if req == nil || lim == nil || req.Sign() <= 0 || req.Cmp(*lim) > 0 {
			return fmt.Errorf("%s: want a request no larger than a limit", name)
		}
	}
	cfg, err := s.config()
	if err != nil {
		return err
	}
	slots := cfg.Server.MaxConcurrent
	if slots == 0 {
		return errors.New("server.max_concurrent is 0, which means the node's CPU count, not the pod's: set it")
	}
	l, b := cfg.Limits, cfg.Backend
	perSlot := int64(max(l.MemoryMB, l.Run.MemoryMB, l.Compile.MemoryMB)+b.WorkspaceSizeMB+b.TmpSizeMB) << 20
	if need, lim := int64(slots)*perSlot, quantity(r.Limits, corev1.ResourceMemory); lim.Value() < need {
		return fmt.Errorf("memory limit %v is below %d slots of %d MiB (memory, /workspace, /tmp)", lim, slots, perSlot>>20)
	}
	var dirs resource.Quantity
	for _, v := range s.dep.Spec.Template.Spec.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.Medium == corev1.StorageMediumMemory {
			continue
		}
		if v.EmptyDir.SizeLimit == nil {
			return fmt.Errorf("emptyDir %s has no sizeLimit", v.Name)
		}
		dirs.Add(*v.EmptyDir.SizeLimit)
		mount := ""
		for _, m := range c.VolumeMounts {
			if m.Name == v.Name {
				mount = m.MountPath
			}
		}
		if beneath(cfg.ControlPlane.ResultsDir, mount) && v.EmptyDir.SizeLimit.Value() < int64(cfg.ControlPlane.MaxSpoolMB)<<20 {
			return fmt.Errorf("the results' volume (%v) is smaller than control_plane.max_spool_mb (%d MiB)", v.EmptyDir.SizeLimit, cfg.ControlPlane.MaxSpoolMB)
		}
	}
	if lim := quantity(r.Limits, corev1.ResourceEphemeralStorage); lim.Cmp(dirs) < 0 {
		return fmt.Errorf("ephemeral-storage limit %v is below the emptyDirs' %v", lim, &dirs)
	}
	return nil
}

// probeValues are values of every type of the configuration; a variable
// the configuration reads changes it, or is refused, with one of them.
var probeValues = []string{"true", "false", "1", "2", "7s", "probe-value"}

// checkVariablesRead: every CODERUNNER_ variable of the container is one
// the executor reads. A misspelt one would be ignored without a word.
func (s *set) checkVariablesRead(c *corev1.Container) error {
	base, err := s.config()
	if err != nil {
		return err
	}
	for _, e := range c.Env {
		// CODERUNNER_CONFIG is read by the command line, not the loader.
		if !strings.HasPrefix(e.Name, "CODERUNNER_") || e.Name == "CODERUNNER_CONFIG" {
			continue
		}
		read := false
		for _, v := range probeValues {
			cfg, err := s.configWith(map[string]string{e.Name: v})
			if err != nil || !reflect.DeepEqual(cfg, base) {
				read = true
				break
			}
		}
		if !read {
			return fmt.Errorf("%s is not a variable the executor reads", e.Name)
		}
	}
	return nil
}
