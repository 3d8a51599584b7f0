package lang

import (
	"regexp"
	"strings"
	"testing"
)

func TestJavaClass(t *testing.T) {
	tests := []struct{ name, code, want string }{
		{"public class", "public class Main { public static void main(String[] a) {} }", "Main"},
		{"public final class", "import java.util.*;\n\npublic final class Foo {}", "Foo"},
		{"generics", "public class Box<T extends Comparable<T>> { T t; }", "Box"},
		{"main-declaring class", "class Helper {}\nclass Prog {\n  public static void main(String... args) {}\n}", "Prog"},
		{"main with final and annotations", "class A {}\nclass B { @Deprecated public static final void main(final String[] x) {} }", "B"},
		{"public class beats main", "class Runner { public static void main(String[] a) {} }\npublic class Answer {}", "Answer"},
		{"nested public class is not top level", "class Outer {\n  public static class Inner {}\n  public static void main(String[] a) {}\n}", "Outer"},
		{"comment", "// public class Fake {}\n/* public class Other {} */\nclass Real { public static void main(String[] a) {} }", "Real"},
		{"javadoc", "/** Use like public class Doc. */\nclass X {}", "Solution"},
		{"string", "class S { static String s = \"public class Str {\"; public static void main(String[] a) {} }", "S"},
		{"escaped quote in string", `class S { String s = "\" public class Q {"; static void main(String[] a) {} }`, "S"},
		{"char literal brace", "class C { char c = '{'; public static void main(String[] a) {} }\nclass D {}", "C"},
		{"text block", "class T {\n String s = \"\"\"\n public class TB {\n \"\"\";\n public static void main(String[] a) {}\n}", "T"},
		{"none", "int x = 1;", "Solution"},
		{"empty", "", "Solution"},
		{"no main", "class A {} class B {}", "Solution"},
		{"instance main is not static", "class A { void main() {} }", "Solution"},
		{"record", "public record Point(int x, int y) {}", "Point"},
		{"enum with main", "enum E { X; public static void main(String[] a) {} }", "E"},
		{"interface main", "interface I { static void main(String[] a) {} }", "I"},
		{"unicode name", "public class Привет {}", "Привет"},
		{"dollar", "public class $Money {}", "$Money"},
		{"unterminated", "public class Open {", "Open"},
		{"class literal", "class A { static void main(String[] a) { Object o = A.class; } }", "A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := JavaClass(tt.code); got != tt.want {
				t.Errorf("JavaClass = %q, want %q", got, tt.want)
			}
		})
	}
}

var javaIdent = regexp.MustCompile(`^[\p{L}_$][\p{L}\p{N}_$]*$`)

func FuzzJavaClass(f *testing.F) {
	for _, s := range []string{
		"public class Main {}", "class A { public static void main(String[] a) {} }",
		"/* */ \"\"\" ' \\", "public class X<T> { \"}\" }", "}}}{{{ class", "public class",
	} {
		f.Add(s)
	}
	java, _ := Default().Lookup("java")
	f.Fuzz(func(t *testing.T, code string) {
		c := JavaClass(code)
		if !javaIdent.MatchString(c) {
			t.Fatalf("JavaClass(%q) = %q, not an identifier", code, c)
		}
		name := java.SourceName(code)
		if name != c+".java" || strings.ContainsAny(name, "/\\\x00") {
			t.Fatalf("SourceName(%q) = %q", code, name)
		}
	})
}
