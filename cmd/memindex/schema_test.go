package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"memindex/schemas"
)

func TestSchemaCommand(t *testing.T) {
	var out bytes.Buffer
	if err := runSchema(nil, &out); err != nil || !strings.Contains(out.String(), "search-request") {
		t.Fatalf("memindex schema: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := runSchema([]string{"event"}, &out); err != nil {
		t.Fatal(err)
	}
	if want, _ := schemas.Get("event"); !bytes.Equal(out.Bytes(), want) {
		t.Errorf("memindex schema event printed %d bytes, not schemas/event.schema.json", out.Len())
	}
	out.Reset()
	if err := runSchema([]string{"event", "--bundle"}, &out); err != nil || !json.Valid(out.Bytes()) || !strings.Contains(out.String(), `"memindex-defs"`) {
		t.Errorf("memindex schema event --bundle: %v, %.200s", err, out.String())
	}
	if err := runSchema([]string{"nope"}, &out); !errors.Is(err, schemas.ErrUnknown) || !strings.Contains(err.Error(), "event") {
		t.Errorf("memindex schema nope: %v, want ErrUnknown listing the names", err)
	}
	if err := runSchema([]string{"event", "error"}, &out); err == nil {
		t.Error("memindex schema event error: no error for two names")
	}
}
