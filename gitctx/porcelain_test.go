package gitctx

import (
	"reflect"
	"testing"
)

// TestParsePorcelainV2 feeds hand-written records; the tests in
// gitctx_test.go check the parser against real git output.
func TestParsePorcelainV2(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Status
		wantErr bool
	}{
		{name: "empty", in: ""},
		{
			name: "ordinary records, path with spaces",
			in: "1 .M N... 100644 100644 100644 aaaa aaaa a b.txt\x00" +
				"1 M. N... 100644 100644 100644 aaaa bbbb staged.txt\x00" +
				"1 .T N... 100644 100644 120000 aaaa aaaa link\x00" +
				"1 A. N... 000000 100644 100644 0000 bbbb new.txt\x00" +
				"1 AD N... 000000 100644 000000 0000 bbbb added-then-gone.txt\x00" +
				"1 .D N... 100644 100644 000000 aaaa aaaa gone.txt\x00" +
				"1 D. N... 100644 000000 000000 aaaa 0000 removed.txt\x00" +
				"1 .M SC.. 160000 160000 160000 aaaa aaaa lib\x00",
			want: Status{
				Modified: []string{"a b.txt", "lib", "link", "staged.txt"},
				Added:    []string{"added-then-gone.txt", "new.txt"},
				Deleted:  []string{"gone.txt", "removed.txt"},
			},
		},
		{
			name: "rename and copy carry the original path",
			in: "2 R. N... 100644 100644 100644 aaaa aaaa R100 new name.txt\x00old name.txt\x00" +
				"2 C. N... 100644 100644 100644 aaaa aaaa C75 copy.txt\x00orig.txt\x00" +
				"2 RD N... 100644 100644 000000 aaaa aaaa R100 moved-then-gone.txt\x00was.txt\x00",
			want: Status{
				Added:   []string{"copy.txt", "new name.txt"},
				Deleted: []string{"old name.txt", "was.txt"},
			},
		},
		{
			name: "unmerged, untracked, ignored, headers",
			in: "# branch.oid abcd\x00# branch.head main\x00" +
				"u UU N... 100644 100644 100644 100644 h1 h2 h3 conflict.txt\x00" +
				"? dir/un tracked\x00! ignored.tmp\x00? new\nline\x00",
			want: Status{
				Unmerged:  []string{"conflict.txt"},
				Untracked: []string{"dir/un tracked", "new\nline"},
			},
		},
		{name: "short ordinary record", in: "1 .M N... 100644\x00", wantErr: true},
		{name: "rename without original path", in: "2 R. N... 100644 100644 100644 aaaa aaaa R100 new.txt\x00", wantErr: true},
		{name: "short unmerged record", in: "u UU N... 100644 h1 c.txt\x00", wantErr: true},
		{name: "unknown record type", in: "x what\x00", wantErr: true},
		{name: "empty record", in: "? a\x00\x00", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePorcelainV2([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestCleanPath(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "AGENT.md", want: "AGENT.md"},
		{in: "./docs//x.md", want: "docs/x.md"},
		{in: "docs/../AGENT.md", want: "AGENT.md"},
		{in: "", wantErr: true},
		{in: ".", wantErr: true},
		{in: "..", wantErr: true},
		{in: "../x", wantErr: true},
		{in: "a/../../x", wantErr: true},
		{in: "/etc/passwd", wantErr: true},
	}
	for _, tt := range tests {
		got, err := cleanPath(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("cleanPath(%q) = %q, %v; want %q, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
