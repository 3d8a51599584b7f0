package kubernetes_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/coderunner/coderunner/controlplane"
	"github.com/coderunner/coderunner/httpapi"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/invoke"
)

// The files of the directory that are not among the kustomization's
// resources.
const (
	kustomizationFile = "kustomization.yaml"
	secretExampleFile = "secret.example.yaml"
)

// kustomization is the part of kustomize's Kustomization that the
// directory uses; any other field is refused, so that a field this test
// does not understand cannot change what is applied unseen.
type kustomization struct {
	APIVersion         string         `json:"apiVersion"`
	Kind               string         `json:"kind"`
	Namespace          string         `json:"namespace"`
	Resources          []string       `json:"resources"`
	ConfigMapGenerator []configMapGen `json:"configMapGenerator"`
}

// configMapGen is one ConfigMap the kustomization makes from files.
type configMapGen struct {
	Name  string   `json:"name"`
	Files []string `json:"files"`
}

// object is a decoded manifest and the file it came from.
type object struct {
	file string
	obj  runtime.Object
}

// set is the decoded directory.
type set struct {
	kust    kustomization
	objects []object
	ns      *corev1.Namespace
	dep     *appsv1.Deployment
	svc     *corev1.Service
	pdb     *policyv1.PodDisruptionBudget
	hpa     *autoscalingv2.HorizontalPodAutoscaler
	np      *networkingv1.NetworkPolicy
	// secret is secret.example.yaml: the Secret the pods read, with
	// placeholders.
	secret *corev1.Secret
	// files are the configMapGenerator's files by name (config.yaml,
	// drain.sh), each as its key in the generated ConfigMap.
	files map[string][]byte
	// metrics are the names of the metrics the executor serves.
	metrics map[string]bool
}

// decoder decodes YAML strictly into the registered API types: an unknown
// field, a field spelt in another case, a duplicate key or a value of the
// wrong type is an error.
var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme,
		autoscalingv2.AddToScheme, networkingv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme,
		json.SerializerOptions{Yaml: true, Strict: true})
}()

// decodeFile decodes every YAML document of a file.
func decodeFile(path string) ([]runtime.Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []runtime.Object
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if j, err := yaml.YAMLToJSON(doc); err == nil && string(j) == "null" {
			continue // only comments
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", path, i, err)
		}
		out = append(out, obj)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no object", path)
	}
	return out, nil
}

// loadDir decodes the kustomization in dir, its resources, its generated
// files and the Secret example, and checks that every YAML file of dir is
// one of them.
func loadDir(dir string) (*set, error) {
	raw, err := os.ReadFile(filepath.Join(dir, kustomizationFile))
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kustomizationFile, err)
	}
	s := &set{files: map[string][]byte{}}
	strictErrs, err := kjson.UnmarshalStrict(j, &s.kust)
	if err = errors.Join(append(strictErrs, err)...); err != nil {
		return nil, fmt.Errorf("%s: %w", kustomizationFile, err)
	}
	known := map[string]bool{kustomizationFile: true, secretExampleFile: true}
	for _, f := range s.kust.Resources {
		known[f] = true
		objs, err := decodeFile(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			s.objects = append(s.objects, object{file: f, obj: o})
		}
	}
	for _, g := range s.kust.ConfigMapGenerator {
		for _, f := range g.Files {
			known[f] = true
			if s.files[f], err = os.ReadFile(filepath.Join(dir, f)); err != nil {
				return nil, err
			}
		}
	}
	if err := s.index(); err != nil {
		return nil, err
	}
	secret, err := decodeFile(filepath.Join(dir, secretExampleFile))
	if err != nil {
		return nil, err
	}
	var ok bool
	if s.secret, ok = secret[0].(*corev1.Secret); !ok || len(secret) != 1 {
		return nil, fmt.Errorf("%s: not one Secret", secretExampleFile)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if ext := filepath.Ext(e.Name()); (ext == ".yaml" || ext == ".yml") && !known[e.Name()] {
			return nil, fmt.Errorf("%s is neither a resource nor a generated file of %s: kubectl apply -k would leave it out", e.Name(), kustomizationFile)
		}
	}
	return s, nil
}

// index finds the one object of each kind.
func (s *set) index() error {
	count := map[string]int{}
	for _, o := range s.objects {
		switch v := o.obj.(type) {
		case *corev1.Namespace:
			s.ns = v
		case *appsv1.Deployment:
			s.dep = v
		case *corev1.Service:
			s.svc = v
		case *policyv1.PodDisruptionBudget:
			s.pdb = v
		case *autoscalingv2.HorizontalPodAutoscaler:
			s.hpa = v
		case *networkingv1.NetworkPolicy:
			s.np = v
		default:
			return fmt.Errorf("%s: unexpected %T", o.file, o.obj)
		}
		count[fmt.Sprintf("%T", o.obj)]++
	}
	for _, want := range []any{s.ns, s.dep, s.svc, s.pdb, s.hpa, s.np} {
		if n := count[fmt.Sprintf("%T", want)]; n != 1 {
			return fmt.Errorf("%d objects of type %T, want 1", n, want)
		}
	}
	return nil
}

// load decodes this directory; the executor's metric names come with it.
func load(t *testing.T) *set {
	t.Helper()
	s, err := loadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	s.metrics = servedMetrics(t)
	return s
}

// servedMetrics are the names of the metrics a real server serves, with a
// control plane reporter (which adds the spool's).
func servedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	srv, _ := newServer(t, nil, "http://127.0.0.1:9")
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) `).FindAllSubmatch(body, -1) {
		names[string(m[1])] = true
	}
	if len(names) == 0 {
		t.Fatalf("no metric in /metrics:\n%s", body)
	}
	return names
}

// container is the Deployment's executor container.
func (s *set) container() (*corev1.Container, error) {
	cs := s.dep.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		return nil, fmt.Errorf("the pod has %d containers, want the executor alone", len(cs))
	}
	return &cs[0], nil
}

// env returns the container's variable name, or nil.
func env(c *corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// Stand-ins for the downward API's values.
var fieldValues = map[string]string{
	"metadata.name":      "coderunner-executor-7d9f8-abcde",
	"metadata.uid":       "0b4f6a4e-3c1d-4c52-9a53-5f8e2f7d1a10",
	"metadata.namespace": "coderunner",
}

// config loads config.yaml as the executor in the pod does: with the
// container's environment (the Secret example's values for the tokens,
// stand-ins for the downward API's).
func (s *set) config() (*config.Config, error) { return s.configWith(nil) }

// configWith is config with some variables set otherwise.
func (s *set) configWith(override map[string]string) (*config.Config, error) {
	c, err := s.container()
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	for _, e := range c.Env {
		v, err := s.envValue(e)
		if err != nil {
			return nil, err
		}
		vars[e.Name] = v
	}
	for k, v := range override {
		vars[k] = v
	}
	dir, err := os.MkdirTemp("", "coderunner-k8s-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, s.files["config.yaml"], 0o600); err != nil {
		return nil, err
	}
	cfg, err := config.Load(path, func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	})
	if err != nil {
		return nil, fmt.Errorf("config.yaml with the pod's environment: %w", err)
	}
	return cfg, nil
}

// envValue is the value a variable has in the pod.
func (s *set) envValue(e corev1.EnvVar) (string, error) {
	switch {
	case e.ValueFrom == nil:
		return e.Value, nil
	case e.ValueFrom.SecretKeyRef != nil:
		ref := e.ValueFrom.SecretKeyRef
		v, ok := s.secret.StringData[ref.Key]
		if ref.Name != s.secret.Name || !ok {
			return "", fmt.Errorf("%s: Secret %s has no key %q (see %s)", e.Name, ref.Name, ref.Key, secretExampleFile)
		}
		return v, nil
	case e.ValueFrom.FieldRef != nil:
		v, ok := fieldValues[e.ValueFrom.FieldRef.FieldPath]
		if !ok {
			return "", fmt.Errorf("%s: no stand-in for field %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
		}
		return v, nil
	}
	return "", fmt.Errorf("%s: a source this test does not know", e.Name)
}

// holdExecutor answers /execute; each run waits until release is closed.
type holdExecutor struct {
	started chan string
	release chan struct{}
}

func (h *holdExecutor) Run(ctx context.Context, req invoke.Request) *invoke.Result {
	h.started <- req.ExecutionID
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return &invoke.Result{ExecutionID: req.ExecutionID, Status: invoke.StatusSuccess}
}

// serverToken is the API token of newServer's server.
const serverToken = "test-token"

// newServer builds a real HTTP service over a holdExecutor (nil: one of
// its own), reporting to controlPlane, and marks it ready.
func newServer(t *testing.T, h *holdExecutor, controlPlane string) (*httpapi.Server, *holdExecutor) {
	t.Helper()
	if h == nil {
		h = &holdExecutor{started: make(chan string, 16), release: make(chan struct{})}
		close(h.release)
	}
	rep := newReporter(t, controlPlane)
	srv, err := httpapi.New(httpapi.Options{
		Executor: h, Reporter: rep, APITokens: []string{serverToken}, MaxConcurrent: 1, QueueSize: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetReady()
	return srv, h
}

// newReporter is a control plane reporter to url that retries quickly.
func newReporter(t *testing.T, url string) *controlplane.Reporter {
	t.Helper()
	rep, err := controlplane.New(controlplane.Options{
		URL: url, Token: "internal-token", ContainerID: "c1", ResultsDir: t.TempDir(),
		Backoff: []time.Duration{20 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rep.Close() })
	return rep
}

// beneath reports whether path is dir or lies under it.
func beneath(path, dir string) bool {
	path, dir = filepath.Clean(path), filepath.Clean(dir)
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// labelsOf is the pod template's labels.
func (s *set) labelsOf() map[string]string { return s.dep.Spec.Template.Labels }

// objectMeta lists every object's metadata with its file.
func (s *set) objectMeta() []struct {
	file string
	meta metav1.Object
} {
	var out []struct {
		file string
		meta metav1.Object
	}
	for _, o := range s.objects {
		if m, ok := o.obj.(metav1.Object); ok {
			out = append(out, struct {
				file string
				meta metav1.Object
			}{o.file, m})
		}
	}
	return out
}
