package main

import (
	"strings"
	"testing"
)

// A missing tool names the package that has it (README.md's list): cvlc
// and promtool were answered "apt-get install ffmpeg".
func TestMissingToolNamesItsPackage(t *testing.T) {
	for name, pkg := range map[string]string{"cvlc": "vlc-bin vlc-plugin-base", "promtool": "prometheus", "ffprobe": "ffmpeg",
		"gst-launch-1.0": "gstreamer1.0-tools", "redis-server": "redis-server"} {
		if got := missingToolMessage(name); !strings.Contains(got, name+" not found") || !strings.Contains(got, "apt-get install "+pkg) {
			t.Errorf("%s: %q, want apt-get install %s", name, got, pkg)
		}
	}
}
