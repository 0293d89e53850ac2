package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	v1 "vodcluster/proto/vodcluster/v1"
)

func titlesCmd(g *globals) *cobra.Command {
	var refresh bool
	cmd := &cobra.Command{
		Use:   "titles",
		Short: "List the catalog",
		Long: "List the manager's catalog, which it reads from the origin every catalog_refresh (1 min).\n\n" +
			"--refresh has it read the origin's catalog now first (after titles were published, withdrawn\n" +
			"or replaced there) and says what changed, on standard error: the origin looks at its title\n" +
			"directory first and loads what changed there (run it once the copies are over). When the\n" +
			"origin refused its directory's change (a catalog.yaml that does not parse, a title file\n" +
			"missing or not whole MPEG-TS), the titles are listed and an error line says why (it serves\n" +
			"the titles it loaded before), exit status 1: a script that copies titles in, then runs\n" +
			"vodctl titles --refresh, sees the refusal. So does a directory still changing while the\n" +
			"origin looked (a copy in progress): nothing of the change loaded, exit status 1.\n" +
			"Loading a large new file takes the origin a while: raise --timeout for it.\n\n" +
			"With no title, a note on standard error says whether the catalog is empty (the origin has\n" +
			"no title: publish titles in its directory) or not read yet (the origin not reached since\n" +
			"the manager started), or that the manager has no origin (manager.origin not set). --json\n" +
			"carries hasCatalog and catalogReadUnixMs (when the manager last read the catalog from the\n" +
			"origin, changed or not, unix ms; 0 = not since it started).",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var refused string // the origin refused or did not load its changed catalog: the error vodctl ends with
			err := g.admin(func(ctx context.Context, c v1.AdminClient) (proto.Message, error) {
				if refresh {
					r, err := c.RefreshCatalog(ctx, &v1.RefreshCatalogRequest{})
					if err != nil {
						return nil, err
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "catalog read from the origin: %d titles; published %d %v, withdrawn %d %v, replaced %d %v\n",
						r.Titles, len(r.Published), r.Published, len(r.Withdrawn), r.Withdrawn, len(r.Replaced), r.Replaced)
					if r.GetOriginCatalogRefused() != "" || r.GetOriginDirectoryChanging() {
						// After the titles: the error line is the last word.
						refused = refreshNote(r)
					} else if note := refreshNote(r); note != "" {
						fmt.Fprintln(cmd.ErrOrStderr(), note)
					}
				}
				var first *v1.ListTitlesResponse // whether the manager has a catalog, when read
				ts, err := v1.ListAllTitles(ctx, func(ctx context.Context, req *v1.ListTitlesRequest, opts ...grpc.CallOption) (*v1.ListTitlesResponse, error) {
					r, err := c.ListTitles(ctx, req, opts...)
					if first == nil {
						first = r
					}
					return r, err
				}) // a page at a time: a large catalog passes gRPC's 4 MB message limit
				if err != nil {
					return nil, err
				}
				if len(ts) == 0 {
					// A header alone, exit 0: the note says which case.
					if note := noTitleNote(first, refresh); note != "" {
						fmt.Fprintln(cmd.ErrOrStderr(), note)
					}
				}
				return &v1.ListTitlesResponse{Titles: ts, HasCatalog: first.HasCatalog, CatalogReadUnixMs: first.CatalogReadUnixMs}, nil
			}, func(m proto.Message, w *tabwriter.Writer) {
				fmt.Fprintln(w, "ID\tNAME\tPACKAGE\tDURATION(s)\tBITRATE(kbit/s)\tSIZE")
				for _, t := range m.(*v1.ListTitlesResponse).Titles {
					fmt.Fprintf(w, "%s\t%s\t%s\t%.1f\t%d\t%s\n", t.Id, t.Name, t.Package, t.DurationS, t.BitrateBps/1000, sizeText(t.SizeBytes))
				}
			})
			if err == nil && refused != "" {
				// Exit status 1: the change copied in is not served.
				return errors.New(refused)
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&refresh, "refresh", false, "have the manager read the origin's catalog now first, and say what changed")
	return cmd
}

// refreshNote is the line vodctl titles --refresh prints after what
// changed, when the read may not be what the origin's title directory
// holds: a warning when the origin refused the directory's last change
// (it serves the titles it loaded before), a note when the origin did not
// look at its directory first (one that predates check_directory reads it
// every catalog_poll_interval only), a warning when the origin's directory
// kept changing while it looked (a copy in progress: the change not
// loaded); "" otherwise, and from a manager that predates saying
// (origin_checked_directory unset). vodctl prints both warnings as its
// error, after the titles, and exits 1.
func refreshNote(r *v1.RefreshCatalogResponse) string {
	switch {
	case r.GetOriginDirectoryChanging():
		return "warning: the origin's title directory is still changing (a copy in progress?): not loaded yet; run --refresh again once copies are over"
	case r.GetOriginCatalogRefused() != "":
		return "warning: the origin refused its changed catalog (" + r.GetOriginCatalogRefused() + "): it serves the titles it loaded before; " +
			"fix its title directory (the origin's log says \"catalog not reloaded\"), then vodctl titles --refresh"
	case r.OriginCheckedDirectory != nil && !r.GetOriginCheckedDirectory():
		return "note: the origin did not look at its title directory first (it predates being asked to): it reads it every catalog_poll_interval (5 s) once a change has held still, " +
			"so a change made in the last seconds may not be in this read; vodctl titles --refresh again in a few seconds, or send the origin SIGHUP first"
	}
	return ""
}

// noTitleNote is the note of vodctl titles on a manager's answer r with
// no title, after a --refresh when refreshed: whether its catalog is empty
// (publish titles at the origin) or not read yet (the origin not reached),
// or both possible for a manager that does not say (has_catalog unset: an
// older one), or that it has no origin (has_catalog with
// catalog_read_unix_ms 0: a catalog never read). "" after a refresh of an
// older manager, which said already.
func noTitleNote(r *v1.ListTitlesResponse, refreshed bool) string {
	switch {
	case r == nil || r.HasCatalog == nil:
		if refreshed {
			return ""
		}
		return "no title: the manager's catalog is empty, or not read yet (its origin not reached: /healthz says so); vodctl titles --refresh reads it now, or says why it cannot"
	case !r.GetHasCatalog():
		return "no title: the manager has no catalog yet: it has not reached its origin since it started (and its store held none), so the origin's titles are not known; " +
			"check that the origin is running and reachable at the manager's origin address (the manager's /healthz and log say why); vodctl titles --refresh reads it now, or says why it cannot"
	case r.GetCatalogReadUnixMs() == 0:
		// A catalog never read from an origin: the manager has none
		// (manager.origin not set), its store no title.
		return "no title: the manager has no origin (manager.origin not set): its catalog is only the one its store holds, and that holds no title; " +
			"set origin (the origin's gRPC address) in the manager's configuration and restart it"
	}
	note := "no title: the manager's catalog is empty: the origin had no title when last read, " +
		unixMs(r.GetCatalogReadUnixMs())
	note += "; publish titles in the origin's directory"
	if !refreshed {
		note += ", then vodctl titles --refresh"
	}
	return note
}
