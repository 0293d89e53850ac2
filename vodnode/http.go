package vodnode

import (
	"errors"
)

// httpServer is HTTP delivery (progressive MPEG-TS and HLS).
type httpServer struct {
	n *Node
}

func (h *httpServer) start(addr string) error { return errors.New("HTTP delivery not built yet") }
func (h *httpServer) close()                  {}
func (h *httpServer) addr() string            { return "" }
