package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/tether/tether/messages"
)

// isEvents reports whether get's first argument names events.
func isEvents(kind string) bool {
	switch strings.ToLower(kind) {
	case "events", "event", "ev":
		return true
	}
	return false
}

// eventsRequest reads get events' optional KIND or KIND/NAME.
func eventsRequest(args []string) (*messages.ListEventsRequest, error) {
	req := &messages.ListEventsRequest{}
	if len(args) == 0 {
		return req, nil
	}
	kind, name, named := strings.Cut(args[0], "/")
	if kind == "" || (named && name == "") {
		return nil, usageError{fmt.Errorf("get events %q: want KIND or KIND/NAME (volume/v1, node/n1, workload/w1)", args[0])}
	}
	req.Kind, req.Name = kind, name
	return req, nil
}

// getEvents is tether get events: the list, then with watch every new
// event until SIGINT or SIGTERM.
func getEvents(cmd *cobra.Command, cf *clientFlags, output string, watch bool, args []string) error {
	req, err := eventsRequest(args)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if !watch {
		c, ctx, done, err := cf.open()
		if err != nil {
			return err
		}
		defer done()
		res, err := c.ListEvents(ctx, req)
		if err != nil {
			return rpcError(err)
		}
		if output == "json" {
			return printJSON(out, res)
		}
		if res.OmittedEvents > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "(%d older events omitted)\n", res.OmittedEvents)
		}
		if len(res.Events) == 0 {
			fmt.Fprintln(out, "No events found.")
			return nil
		}
		printEventHeader(out)
		for _, e := range res.Events {
			printEventRow(out, e)
		}
		return nil
	}
	c, closeConn, err := cf.connect()
	if err != nil {
		return err
	}
	defer closeConn()
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	stream, err := c.WatchEvents(ctx, req)
	if err != nil {
		return watchEnd(ctx, err)
	}
	if output == "table" {
		printEventHeader(out)
	}
	for {
		e, err := stream.Recv()
		if err != nil {
			return watchEnd(ctx, err)
		}
		if output == "json" {
			b, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(e)
			if err != nil {
				return err
			}
			fmt.Fprintln(out, string(b))
			continue
		}
		printEventRow(out, e)
	}
}

// watchEnd is how a watch ended: nil when the user stopped it.
func watchEnd(ctx context.Context, err error) error {
	if ctx.Err() != nil || status.Code(err) == codes.Canceled {
		return nil
	}
	if errors.Is(err, io.EOF) {
		return errors.New("the server ended the watch")
	}
	return rpcError(err)
}

// Rows are padded, not tab-aligned: a watch prints them one at a time.
const eventRow = "%-20s  %-7s  %-24s  %-28s  %-8s  %s\n"

func printEventHeader(w io.Writer) {
	fmt.Fprintf(w, eventRow, "TIME", "TYPE", "REASON", "OBJECT", "NODE", "MESSAGE")
}

func printEventRow(w io.Writer, e *messages.EventInfo) {
	typ := "Normal"
	if e.Warning {
		typ = "Warning"
	}
	ts := "-"
	if e.TimeUnixNano != 0 {
		ts = time.Unix(0, e.TimeUnixNano).UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, eventRow, ts, typ, e.Type, e.Kind+"/"+e.Name, dash(e.Node), e.Message)
}
