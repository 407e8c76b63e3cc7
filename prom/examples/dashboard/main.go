// Command dashboard serves a ttldb DB's metrics, /metrics for Prometheus
// and /debug/vars (expvar) as JSON, and its change stream, /watch, as
// server-sent events. The DB holds a "sessions" collection whose documents
// expire 2 s after they were last seen; a new session arrives every
// second, so the TTL figures move and the stream shows inserts and TTL
// deletions.
//
//	go run ./examples/dashboard              # serve on 127.0.0.1:9464 until interrupted
//	curl -N http://127.0.0.1:9464/watch      # follow the change stream
//	go run ./examples/dashboard -once        # scrape /metrics and read /watch once, print them, exit
package main

import (
	"bufio"
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/prom"
	"github.com/ttldb/ttldb/ttlexpvar"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9464", "address to serve on")
	once := flag.Bool("once", false, "serve on a free loopback port, scrape /metrics and read /watch once, print them and exit")
	flag.Parse()
	if err := run(*addr, *once); err != nil {
		log.Fatal(err)
	}
}

func run(addr string, once bool) error {
	// DeadlineWake: the monitor wakes when a document expires, not once a
	// minute, so the sessions go about 2 s after their lastSeen.
	db, err := ttldb.Open(ttldb.WithMonitor(ttldb.MonitorOptions{DeadlineWake: true}))
	if err != nil {
		return err
	}
	defer db.Close()
	sessions := db.Collection("sessions")
	if _, err := sessions.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("lastSeen")}, ExpireAfterSeconds: ttldb.Seconds(2)}); err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	if err := reg.Register(prom.NewCollector(db, prometheus.Labels{"db": "sessions"})); err != nil {
		return err
	}
	if err := ttlexpvar.Publish("ttldb.sessions", db); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/debug/vars", expvar.Handler())
	mux.Handle("/watch", watchHandler(db, keepAlive))

	if once {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// Requests' contexts derive from base: cancelled at shutdown, it ends
	// the /watch streams, which Shutdown would otherwise wait for.
	base, cancelBase := context.WithCancel(context.Background())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, BaseContext: func(net.Listener) context.Context { return base }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		cancelBase()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()

	if once {
		return runOnce(db, sessions, "http://"+ln.Addr().String())
	}
	log.Printf("serving http://%s/metrics, /debug/vars and /watch", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case err := <-served:
			return err
		case now := <-tick.C:
			if _, err := sessions.InsertOne(context.Background(), ttldb.Document{"user": fmt.Sprintf("user%d", i%7), "lastSeen": now}); err != nil {
				return err
			}
		}
	}
}

// runOnce opens /watch, stores three sessions last seen a minute ago,
// deletes them with a TTL pass, stores two more (expired, not yet
// deleted: a backlog) and one fresh, then scrapes /metrics and prints it,
// and prints the nine events /watch streamed.
func runOnce(db *ttldb.DB, sessions *ttldb.Collection, base string) error {
	// The background monitor off, the figures are those of the pass below.
	db.SetTTLMonitorEnabled(false)
	stream, err := http.Get(base + "/watch")
	if err != nil {
		return err
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /watch: %s", stream.Status)
	}
	old := time.Now().Add(-time.Minute)
	for _, user := range []string{"ada", "grace", "alan"} {
		if _, err := sessions.InsertOne(context.Background(), ttldb.Document{"user": user, "lastSeen": old}); err != nil {
			return err
		}
	}
	if _, err := db.RunTTLPass(context.Background()); err != nil {
		return err
	}
	for _, d := range []ttldb.Document{
		{"user": "edsger", "lastSeen": old},
		{"user": "barbara", "lastSeen": old},
		{"user": "ken", "lastSeen": time.Now()},
	} {
		if _, err := sessions.InsertOne(context.Background(), d); err != nil {
			return err
		}
	}
	res, err := http.Get(base + "/metrics")
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /metrics: %s", res.Status)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if !strings.Contains(string(body), "ttldb_ttl_passes_total") {
		return errors.New("the scrape has no ttldb_ttl_passes_total")
	}
	if _, err = os.Stdout.Write(body); err != nil {
		return err
	}
	// The stream: three inserts, their three TTL deletions, three inserts.
	sc := bufio.NewScanner(stream.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for events := 0; events < 9 && sc.Scan(); {
		line := sc.Text()
		if line == "" {
			events++
		}
		fmt.Println(line)
	}
	return sc.Err()
}
