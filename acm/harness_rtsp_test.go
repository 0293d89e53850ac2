package acm

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/bluenviron/gortsplib/v4/pkg/conn"
)

// rtspClient is a raw RTSP client for exact status checks.
type rtspClient struct {
	t    testing.TB
	nc   net.Conn
	c    *conn.Conn
	cseq int
	addr string
}

func (e *env) dialRTSP() *rtspClient {
	e.t.Helper()
	nc, err := net.Dial("tcp", e.m.RTSPAddr())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { nc.Close() })
	return &rtspClient{t: e.t, nc: nc, c: conn.NewConn(nc), addr: e.m.RTSPAddr()}
}

func (c *rtspClient) url(path string) string { return "rtsp://" + c.addr + path }

// do sends method for path with extra headers and reads the response.
func (c *rtspClient) do(method base.Method, path string, h base.Header) (*base.Response, error) {
	u, err := base.ParseURL(c.url(path))
	if err != nil {
		c.t.Fatal(err)
	}
	c.cseq++
	if h == nil {
		h = base.Header{}
	}
	h["CSeq"] = base.HeaderValue{fmt.Sprint(c.cseq)}
	if err := c.c.WriteRequest(&base.Request{Method: method, URL: u, Header: h}); err != nil {
		return nil, err
	}
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	return c.c.ReadResponse()
}

func (c *rtspClient) mustDo(method base.Method, path string, h base.Header) *base.Response {
	c.t.Helper()
	res, err := c.do(method, path, h)
	if err != nil {
		c.t.Fatal(err)
	}
	if got := res.Header["CSeq"]; len(got) != 1 || got[0] != fmt.Sprint(c.cseq) {
		c.t.Fatalf("CSeq %v, sent %d", got, c.cseq)
	}
	return res
}

func basicHeader(user, pass string) base.Header {
	return base.Header{"Authorization": base.HeaderValue{"Basic " + b64(user+":"+pass)}}
}

// describe sends an authenticated DESCRIBE (Basic) on a new connection.
func (e *env) describe(user, pass, title string) *base.Response {
	e.t.Helper()
	return e.dialRTSP().mustDo(base.Describe, "/vod/"+title, basicHeader(user, pass))
}
