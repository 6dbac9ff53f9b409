package dashboard_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A minimal client of the W3C WebDriver protocol, enough to drive
// Debian's chromedriver from a test: open a page, find elements by CSS,
// type, click, read text, take a screenshot.

const (
	chromiumPath     = "/usr/bin/chromium"
	chromedriverPath = "/usr/bin/chromedriver"
	elementKey       = "element-6066-11e4-a52e-4f735466cecf"
)

type webDriver struct {
	t       *testing.T
	base    string
	session string
}

// startChromium starts chromedriver on a free loopback port and opens a
// headless Chromium session; both end at cleanup.
func startChromium(t *testing.T) *webDriver {
	t.Helper()
	for _, p := range []string{chromiumPath, chromedriverPath} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run scripts/ensure-browser.sh (apt-get install chromium chromium-driver); scripts/test.sh does", p)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, chromedriverPath, fmt.Sprintf("--port=%d", port), "--allowed-ips=127.0.0.1")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting chromedriver: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("chromedriver output:\n%s", logs.String())
		}
	})
	wd := &webDriver{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(wd.base + "/status")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromedriver did not answer on %s: %v\n%s", wd.base, err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	var created struct {
		SessionID string `json:"sessionId"`
	}
	wd.call("POST", "/session", map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{
			"binary": chromiumPath,
			"args": []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
				"--disable-background-networking", "--window-size=1400,1700"},
		},
	}}}, &created)
	if created.SessionID == "" {
		t.Fatal("chromedriver opened no session")
	}
	wd.session = "/session/" + created.SessionID
	t.Cleanup(func() { wd.call("DELETE", wd.session, nil, nil) })
	return wd
}

// call sends one command; out receives the answer's "value".
func (wd *webDriver) call(method, path string, in, out any) {
	wd.t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			wd.t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, wd.base+path, body)
	if err != nil {
		wd.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		wd.t.Fatalf("webdriver %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var env struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		wd.t.Fatalf("webdriver %s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if resp.StatusCode != http.StatusOK {
		wd.t.Fatalf("webdriver %s %s: %d %s", method, path, resp.StatusCode, env.Value)
	}
	if out != nil {
		if err := json.Unmarshal(env.Value, out); err != nil {
			wd.t.Fatalf("webdriver %s %s: %v in %s", method, path, err, env.Value)
		}
	}
}

func (wd *webDriver) open(url string) {
	wd.t.Helper()
	wd.call("POST", wd.session+"/url", map[string]any{"url": url}, nil)
}

func (wd *webDriver) url() string {
	wd.t.Helper()
	var u string
	wd.call("GET", wd.session+"/url", nil, &u)
	return u
}

// find returns the first element matching a CSS selector.
func (wd *webDriver) find(css string) string {
	wd.t.Helper()
	var el map[string]string
	wd.call("POST", wd.session+"/element", map[string]any{"using": "css selector", "value": css}, &el)
	if el[elementKey] == "" {
		wd.t.Fatalf("webdriver: no element id for %q in %v", css, el)
	}
	return el[elementKey]
}

func (wd *webDriver) count(css string) int {
	wd.t.Helper()
	var els []map[string]string
	wd.call("POST", wd.session+"/elements", map[string]any{"using": "css selector", "value": css}, &els)
	return len(els)
}

func (wd *webDriver) text(css string) string {
	wd.t.Helper()
	var s string
	wd.call("GET", wd.session+"/element/"+wd.find(css)+"/text", nil, &s)
	return strings.TrimSpace(s)
}

func (wd *webDriver) typeInto(css, text string) {
	wd.t.Helper()
	wd.call("POST", wd.session+"/element/"+wd.find(css)+"/value", map[string]any{"text": text}, nil)
}

func (wd *webDriver) click(css string) {
	wd.t.Helper()
	wd.call("POST", wd.session+"/element/"+wd.find(css)+"/click", map[string]any{}, nil)
}

// screenshot writes the viewport as a PNG under dir, returning its path.
func (wd *webDriver) screenshot(dir, name string) string {
	wd.t.Helper()
	var b64 string
	wd.call("GET", wd.session+"/screenshot", nil, &b64)
	png, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		wd.t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		wd.t.Fatal(err)
	}
	p, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		wd.t.Fatal(err)
	}
	if err := os.WriteFile(p, png, 0o644); err != nil {
		wd.t.Fatal(err)
	}
	return p
}

// waitText waits until an element matching css exists (a click's page
// load may still be under way) and returns its text.
func (wd *webDriver) waitText(css string) string {
	wd.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for wd.count(css) == 0 {
		if time.Now().After(deadline) {
			wd.t.Fatalf("webdriver: no %q on %s", css, wd.url())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return wd.text(css)
}

// resize sets the window's size in CSS pixels.
func (wd *webDriver) resize(width, height int) {
	wd.t.Helper()
	wd.call("POST", wd.session+"/window/rect", map[string]any{"width": width, "height": height}, nil)
}

// colorScheme emulates prefers-color-scheme (light or dark) through
// chromedriver's DevTools bridge.
func (wd *webDriver) colorScheme(scheme string) {
	wd.t.Helper()
	wd.call("POST", wd.session+"/goog/cdp/execute", map[string]any{
		"cmd":    "Emulation.setEmulatedMedia",
		"params": map[string]any{"features": []map[string]string{{"name": "prefers-color-scheme", "value": scheme}}},
	}, nil)
}

// exec runs a script in the page and decodes its return value into out.
func (wd *webDriver) exec(script string, out any) {
	wd.t.Helper()
	wd.call("POST", wd.session+"/execute/sync", map[string]any{"script": script, "args": []any{}}, out)
}

// waitURL waits until the page's URL contains part (a click's navigation
// may still be under way) and returns it.
func (wd *webDriver) waitURL(part string) string {
	wd.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		u := wd.url()
		if strings.Contains(u, part) {
			return u
		}
		if time.Now().After(deadline) {
			wd.t.Fatalf("webdriver: still on %s, want %q", u, part)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
