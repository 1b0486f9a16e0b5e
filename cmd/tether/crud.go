package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/messages"
)

// rpcError turns a gRPC status into a plain message.
func rpcError(err error) error {
	if s, ok := status.FromError(err); ok {
		return fmt.Errorf("%s: %s", s.Code(), s.Message())
	}
	return err
}

func getCommand() *cobra.Command {
	var cf clientFlags
	var output string
	var pages pageFlags
	var watch bool
	cmd := &cobra.Command{
		Use:   "get volumes|nodes|workloads [NAME] | get events [KIND[/NAME]] [--watch]",
		Short: "List objects with their status, by name (in pages, followed to the end), or events, newest last",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validateClient(cmd.Flags()); err != nil {
				return err
			}
			if output != "table" && output != "json" {
				return usageError{fmt.Errorf("-o %q: want table or json", output)}
			}
			if isEvents(args[0]) {
				if len(args) > 2 || cmd.Flags().Changed("limit") || cmd.Flags().Changed("chunk-size") {
					return usageError{fmt.Errorf("get events takes one KIND or KIND/NAME, and no --limit or --chunk-size")}
				}
				return getEvents(cmd, &cf, output, watch, args[1:])
			}
			if watch {
				return usageError{fmt.Errorf("--watch: only get events watches")}
			}
			if err := checkKind(args[0]); err != nil {
				return err
			}
			if err := checkNames(args[1:]); err != nil {
				return err
			}
			req := &messages.GetRequest{Kind: args[0]}
			if len(args) == 2 {
				req.Name = args[1]
			}
			if err := pages.check(); err != nil {
				return err
			}
			c, closeConn, err := cf.connect()
			if err != nil {
				return err
			}
			defer closeConn()
			res, err := listAll(c.Get, req, pages, cf.timeout)
			if err != nil {
				return err
			}
			if res.Continue != "" && output == "table" {
				fmt.Fprintf(cmd.ErrOrStderr(), "(the first %d listed; more remain: --limit 0 lists all)\n", listed(res))
			}
			if output == "json" {
				return printJSON(cmd.OutOrStdout(), res)
			}
			return printTable(cmd.OutOrStdout(), res)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "get events: after the list, print new events as they come, until Ctrl-C")
	pages.register(cmd.Flags())
	cf.register(cmd.Flags())
	return cmd
}

func describeCommand() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "describe volume|node|workload NAME",
		Short: "Show one object's state and recent events",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validateClient(cmd.Flags()); err != nil {
				return err
			}
			if err := checkKind(args[0]); err != nil {
				return err
			}
			if err := checkNames(args[1:]); err != nil {
				return err
			}
			c, ctx, done, err := cf.open()
			if err != nil {
				return err
			}
			defer done()
			res, err := c.Describe(ctx, &messages.DescribeRequest{Kind: args[0], Name: args[1]})
			if err != nil {
				return rpcError(err)
			}
			return printDescribe(cmd.OutOrStdout(), res)
		},
	}
	cf.register(cmd.Flags())
	return cmd
}

func deleteCommand() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "delete volume|node|workload NAME [NAME...]",
		Short: "Delete objects of one kind (several: in one transaction, all or nothing)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validateClient(cmd.Flags()); err != nil {
				return err
			}
			if err := checkKind(args[0]); err != nil {
				return err
			}
			if err := checkNames(args[1:]); err != nil {
				return err
			}
			c, ctx, done, err := cf.open()
			if err != nil {
				return err
			}
			defer done()
			if _, err := c.Delete(ctx, &messages.DeleteRequest{Kind: args[0], Name: args[1], Names: args[2:]}); err != nil {
				return rpcError(err)
			}
			for _, name := range args[1:] {
				fmt.Fprintf(cmd.OutOrStdout(), "%s/%s deleted\n", args[0], name)
			}
			return nil
		},
	}
	cf.register(cmd.Flags())
	return cmd
}

func nodeCommand() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:       "node terminate|start|out-of-service|in-service NAME",
		Short:     "Terminate or start a node's sim instance, or mark it out of service",
		Args:      cobra.ExactArgs(2),
		ValidArgs: []string{"terminate", "start", "out-of-service", "in-service"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validateClient(cmd.Flags()); err != nil {
				return err
			}
			if err := checkNames(args[1:]); err != nil {
				return err
			}
			c, ctx, done, err := cf.open()
			if err != nil {
				return err
			}
			defer done()
			res, err := c.NodeOperation(ctx, &messages.NodeOperationRequest{Operation: args[0], Node: args[1]})
			if err != nil {
				return rpcError(err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), res.Result)
			return nil
		},
	}
	cf.register(cmd.Flags())
	return cmd
}
