// Package publish owns the publish mode of the test driver (`dracpu publish`): one process that
// publishes, through the same k8s.io/dynamic-resource-allocation resourceslice controller as the
// kubelet plugin, the pools of many simulated nodes from their fake sysfs trees, with the same
// flags, config.yaml, flavours, refusals and chunking (internal/config, internal/topology,
// internal/devices). The Python simulator (tests/cluster/sim) plays the kubelet and drives it.
//
// This file owns the line protocol: JSON requests on stdin, one per line, and JSON events on
// stdout, one per line (replies carry the request's id). node.go owns one simulated node's
// driver; faults.go the harness's fault modes (partial pools, generation bumps).
//
// Requests (op):
//
//	start   {node, pod, flavor, args, files, hostRoot}: a driver container starts on the node:
//	        parse the flags (exit 2 on a flag error), resolve the config (files: path -> content
//	        of what the kubelet mounted; exit 1 on a config error), read the topology, build the
//	        devices. Reply {ok, exit, log, pool, devices, slices}. Stops an earlier driver's
//	        controller on that node. Publishes nothing yet.
//	publish {node, pod, fault}: publish the started driver's pool; fault "" / "normal" (the
//	        library's controller), "partial:<k>" or "bump" (faults.go). Reply {ok, error}.
//	stop    {node}: the driver container is gone: stop its controller (its slices stay; the
//	        kubelet side deletes them). Reply {ok}.
//
// Events without an id ({event: "log", node, pod, line}) are the driver's later log lines (the
// controller's errors, e.g. dropped fields), for the driver pod's log.
package publish

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"k8s.io/client-go/kubernetes"
)

// Request is one line on stdin.
type Request struct {
	ID       int               `json:"id"`
	Op       string            `json:"op"`
	Node     string            `json:"node"`
	Pod      string            `json:"pod,omitempty"`
	Flavor   string            `json:"flavor,omitempty"`
	Args     []string          `json:"args,omitempty"`
	Files    map[string]string `json:"files,omitempty"`
	HostRoot string            `json:"hostRoot,omitempty"`
	Fault    string            `json:"fault,omitempty"`
}

// Event is one line on stdout: a reply (ID > 0) or a log line (Event "log").
type Event struct {
	ID      int      `json:"id,omitempty"`
	Event   string   `json:"event"`
	Node    string   `json:"node"`
	Pod     string   `json:"pod,omitempty"`
	OK      bool     `json:"ok"`
	Exit    int      `json:"exit,omitempty"`
	Error   string   `json:"error,omitempty"`
	Log     []string `json:"log,omitempty"`
	Line    string   `json:"line,omitempty"`
	Pool    string   `json:"pool,omitempty"`
	Devices int      `json:"devices,omitempty"`
	Slices  int      `json:"slices,omitempty"`
}

// Server holds the simulated nodes' drivers.
type Server struct {
	client kubernetes.Interface
	mu     sync.Mutex
	nodes  map[string]*nodeDriver
	outMu  sync.Mutex
	out    *json.Encoder
	wg     sync.WaitGroup
}

// NewServer writes its events to out.
func NewServer(client kubernetes.Interface, out io.Writer) *Server {
	return &Server{client: client, nodes: map[string]*nodeDriver{}, out: json.NewEncoder(out)}
}

// Emit writes one event line (safe for concurrent use).
func (s *Server) Emit(ev Event) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	_ = s.out.Encode(ev)
}

func (s *Server) node(name string) *nodeDriver {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[name]
	if n == nil {
		n = &nodeDriver{name: name, server: s}
		s.nodes[name] = n
	}
	return n
}

// Serve handles requests until in ends or ctx is done, then stops every controller. Requests for
// one node are handled in order; different nodes concurrently.
func (s *Server) Serve(ctx context.Context, in io.Reader) error {
	queues := map[string]chan Request{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if ctx.Err() != nil {
			break
		}
		var req Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			s.Emit(Event{Event: "reply", Error: fmt.Sprintf("bad request: %v", err)})
			continue
		}
		q := queues[req.Node]
		if q == nil {
			q = make(chan Request, 64)
			queues[req.Node] = q
			s.wg.Add(1)
			go s.work(ctx, q)
		}
		q <- req
	}
	for _, q := range queues {
		close(q)
	}
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.nodes {
		n.stop()
	}
	return sc.Err()
}

func (s *Server) work(ctx context.Context, q <-chan Request) {
	defer s.wg.Done()
	for req := range q {
		s.Emit(s.handle(ctx, req))
	}
}

func (s *Server) handle(ctx context.Context, req Request) Event {
	reply := Event{ID: req.ID, Event: "reply", Node: req.Node, Pod: req.Pod}
	if req.Node == "" {
		reply.Error = "request without a node"
		return reply
	}
	n := s.node(req.Node)
	switch req.Op {
	case "start":
		return n.start(ctx, req, reply)
	case "publish":
		if err := n.publish(ctx, req.Fault); err != nil {
			reply.Error = err.Error()
			return reply
		}
		reply.OK, reply.Pool = true, n.pool
	case "stop":
		n.stop()
		reply.OK = true
	default:
		reply.Error = fmt.Sprintf("unknown op %q", req.Op)
	}
	return reply
}
