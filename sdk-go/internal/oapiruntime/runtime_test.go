package oapiruntime

import (
	"testing"
	"time"
)

// The encodings the generated client relies on, as the upstream runtime produces them.
func TestStyleParam(t *testing.T) {
	type status string
	at := time.Date(2026, 11, 21, 10, 30, 0, 5000000, time.UTC)
	q := StyleParamOptions{ParamLocation: ParamLocationQuery}
	cases := []struct {
		style string
		value any
		opts  StyleParamOptions
		want  string
	}{
		{"form", "a b&c", q, "n=a+b%26c"},
		{"form", 42, q, "n=42"},
		{"form", at, q, "n=2026-11-21T10%3A30%3A00.005Z"},
		{"form", []status{"pending", "failed"}, q, "n=pending&n=failed"},
		{"form", true, q, "n=true"},
		{"simple", "task/01 x", StyleParamOptions{ParamLocation: ParamLocationPath}, "task%2F01%20x"},
	}
	for _, c := range cases {
		got, err := StyleParamWithOptions(c.style, true, "n", c.value, c.opts)
		if err != nil || got != c.want {
			t.Errorf("%s %v: %q %v, want %q", c.style, c.value, got, err, c.want)
		}
	}
	if _, err := StyleParamWithOptions("deepObject", true, "n", map[string]string{}, q); err == nil {
		t.Error("an unsupported style must be an error")
	}
	if _, err := StyleParamWithOptions("form", true, "n", struct{}{}, q); err == nil {
		t.Error("an unsupported type must be an error")
	}
}

func TestBindHeader(t *testing.T) {
	var n int
	if err := BindStyledParameterWithOptions("simple", "Retry-After", " 7", &n, BindStyledParameterOptions{}); err != nil || n != 7 {
		t.Fatalf("%d %v", n, err)
	}
	if err := BindStyledParameterWithOptions("simple", "Retry-After", "soon", &n, BindStyledParameterOptions{}); err == nil {
		t.Fatal("a non-integer must be an error")
	}
}
