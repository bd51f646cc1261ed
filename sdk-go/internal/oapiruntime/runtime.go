// Package oapiruntime is the part of github.com/oapi-codegen/runtime that the generated
// client in api/ calls: styling path and query parameters and binding a response header.
// The upstream module requires gin, echo and iris (for its server adapters), which would
// all land in every consumer's module graph (issue 14); oapi-codegen imports this package
// instead through the user template oapi-templates/imports.tmpl.
//
// Only the shapes the contract uses are supported (style simple in paths and headers,
// style form with explode in queries; strings, integers, booleans, time.Time and slices of
// those). Anything else is an error, so a contract change that needs more fails the tests
// instead of sending a wrong request.
package oapiruntime

import (
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// ParamLocation says where a parameter goes, which decides its escaping.
type ParamLocation int

// Parameter locations, as in the upstream runtime.
const (
	ParamLocationUndefined ParamLocation = iota
	ParamLocationQuery
	ParamLocationPath
	ParamLocationHeader
	ParamLocationCookie
)

// StyleParamOptions mirrors the upstream options the generated code sets.
type StyleParamOptions struct {
	ParamLocation ParamLocation
	Type          string
	Format        string
	Required      bool
	AllowReserved bool
}

// BindStyledParameterOptions mirrors the upstream options the generated code sets.
type BindStyledParameterOptions struct {
	ParamLocation ParamLocation
	Explode       bool
	Required      bool
	Type          string
	Format        string
}

// StyleParamWithOptions serialises one parameter: "name=value" (repeated for a slice) for
// style form with explode, the bare escaped value for style simple.
func StyleParamWithOptions(style string, explode bool, name string, value any, opts StyleParamOptions) (string, error) {
	v := reflect.ValueOf(value)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "", fmt.Errorf("oapiruntime: parameter %s is nil", name)
		}
		v = v.Elem()
	}
	var items []string
	if v.Kind() == reflect.Slice {
		for i := range v.Len() {
			s, err := primitive(v.Index(i))
			if err != nil {
				return "", fmt.Errorf("oapiruntime: parameter %s: %w", name, err)
			}
			items = append(items, s)
		}
	} else {
		s, err := primitive(v)
		if err != nil {
			return "", fmt.Errorf("oapiruntime: parameter %s: %w", name, err)
		}
		items = []string{s}
	}
	switch {
	case style == "simple":
		for i, s := range items {
			items[i] = escape(s, opts.ParamLocation)
		}
		return strings.Join(items, ","), nil
	case style == "form" && explode:
		parts := make([]string, len(items))
		for i, s := range items {
			parts[i] = url.QueryEscape(name) + "=" + escape(s, opts.ParamLocation)
		}
		return strings.Join(parts, "&"), nil
	}
	return "", fmt.Errorf("oapiruntime: parameter %s: style %q (explode %v) is not supported", name, style, explode)
}

func primitive(v reflect.Value) (string, error) {
	if t, ok := v.Interface().(time.Time); ok {
		return t.Format(time.RFC3339Nano), nil
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10), nil
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), nil
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'f', -1, 64), nil
	}
	return "", fmt.Errorf("type %s is not supported", v.Type())
}

func escape(s string, loc ParamLocation) string {
	switch loc {
	case ParamLocationQuery:
		return url.QueryEscape(s)
	case ParamLocationPath:
		return url.PathEscape(s)
	}
	return s
}

// BindStyledParameterWithOptions parses one simple-style value (a response header) into
// dest, a pointer to a string, an integer or a bool.
func BindStyledParameterWithOptions(style, name, value string, dest any, opts BindStyledParameterOptions) error {
	if style != "simple" {
		return fmt.Errorf("oapiruntime: parameter %s: style %q is not supported", name, style)
	}
	v := reflect.ValueOf(dest)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("oapiruntime: parameter %s: destination must be a non-nil pointer", name)
	}
	v = v.Elem()
	switch v.Kind() {
	case reflect.String:
		v.SetString(value)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil {
			return fmt.Errorf("oapiruntime: parameter %s: %w", name, err)
		}
		v.SetInt(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("oapiruntime: parameter %s: %w", name, err)
		}
		v.SetBool(b)
	default:
		return fmt.Errorf("oapiruntime: parameter %s: type %s is not supported", name, v.Type())
	}
	return nil
}
