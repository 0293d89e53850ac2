package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"vodcluster/proto/durtext"
	v1 "vodcluster/proto/vodcluster/v1"
)

func popularityCmd(g *globals) *cobra.Command {
	var limit int32
	cmd := &cobra.Command{
		Use:   "popularity [TITLE]",
		Short: "List the popularity the storage planner learnt, the most demanded titles first",
		Args:  argsBetween(0, 1),
		Long: "List the popularity the storage planner learnt from the viewers' requests, the most demanded\n" +
			"titles first (the first --limit, 20 by default), or TITLE alone with its RANK among them.\n\n" +
			"REQ/H is the learnt request rate, requests per hour: the requests counted with weights that halve\n" +
			"every half-life (storage.half_life, 3h by default), over the mean life of a weight (half-life / ln\n" +
			"2, 4.3h): one request just made reads 0.23, a steady 24 an hour reads 24. A catalog hint (HINT/DAY,\n" +
			"the catalog's popularity: in requests per day), when higher, sets it as a prior. DEMAND, the\n" +
			"order of the rows, is the expected demand in bit/s (kbit/s, Mbit/s): the rate times the mean\n" +
			"session (SESSION(s): the title's own once four of its sessions ended, else the cluster's share of\n" +
			"a title's duration watched, else half the duration) times the title's bitrate, so a title asked\n" +
			"for less often but longer or at a higher bitrate may rank above one with a higher REQ/H. PEAK is that demand scaled to the cluster's remembered peak of total\n" +
			"demand: what the plan counts replicas for. REPLICAS and PLANNED ON are the current plan's (a plan\n" +
			"may place fewer than it wants where no node can take more); COMPLETE counts the alive nodes holding\n" +
			"a complete copy of the version the origin serves now. The plan chooses what the disks keep by the\n" +
			"long-memory rate (--json: valueRequestsPerHour, its half-life 24h), pinned titles first.\n\n" +
			"Refused when the manager runs no storage planner (storage.planner: none).",
		RunE: func(_ *cobra.Command, args []string) error {
			if limit < 0 {
				return fmt.Errorf("--limit %d: want 0 (the manager's default, 20) or more", limit)
			}
			req := &v1.ListPopularityRequest{Limit: limit}
			if len(args) == 1 {
				req.TitleId = args[0]
			}
			return g.admin(func(ctx context.Context, c v1.AdminClient) (proto.Message, error) {
				return c.ListPopularity(ctx, req)
			}, func(m proto.Message, w *tabwriter.Writer) {
				popularityTable(w, m.(*v1.ListPopularityResponse), req.TitleId != "")
			})
		},
	}
	cmd.Flags().Int32Var(&limit, "limit", 0, "at most this many titles, the most demanded first (0: the manager's default, 20)")
	return cmd
}

// popularityTable writes vodctl popularity's table of r, then a line on
// what was left out (unless one title was asked for) and one on the
// cluster's demand, the half-lives and the popularity snapshot.
func popularityTable(w *tabwriter.Writer, r *v1.ListPopularityResponse, one bool) {
	fmt.Fprintln(w, "RANK\tTITLE\tREQ/H\tDEMAND\tPEAK\tSESSION(s)\tHINT/DAY\tREPLICAS\tPLANNED ON\tCOMPLETE\tPINNED")
	for _, p := range r.Titles {
		rank, hint, on := "-", "-", "-"
		if p.Rank > 0 {
			rank = strconv.Itoa(int(p.Rank))
		}
		if p.CatalogPopularityPerDay > 0 {
			hint = strconv.FormatFloat(p.CatalogPopularityPerDay, 'f', -1, 64)
		}
		if len(p.PlannedNodes) > 0 {
			on = strings.Join(p.PlannedNodes, ",")
		}
		fmt.Fprintf(w, "%s\t%s\t%.2f\t%s\t%s\t%.0f\t%s\t%d\t%s\t%d\t%v\n", rank, p.TitleId, p.RequestsPerHour,
			bitRateText(p.DemandBps), bitRateText(p.PeakDemandBps), p.MeanSessionS, hint, p.PlannedReplicas, on, p.CompleteCopies, p.Pinned)
	}
	if !one && int(r.Total) > len(r.Titles) {
		fmt.Fprintf(w, "%d of %d titles (--limit %d for more)\n", len(r.Titles), r.Total, r.Total)
	}
	// A line without a tab: it leaves the table's columns alone.
	fmt.Fprintf(w, "\ncluster demand %s now, remembered peak %s; half-life %s (long memory %s); %s\n",
		bitRateText(r.DemandBps), bitRateText(r.PeakDemandBps), durtext.Written(seconds(r.HalfLifeS)), durtext.Written(seconds(r.ValueHalfLifeS)), snapshotNote(r))
}

// snapshotNote says when the manager restored its popularity snapshot
// and when it last saved it.
func snapshotNote(r *v1.ListPopularityResponse) string {
	restored := "none restored"
	if r.RestoredUnixMs > 0 {
		restored = "restored a snapshot taken " + unixMs(r.RestoredUnixMs)
	}
	saved := "not saved since the manager started"
	if r.SavedUnixMs > 0 {
		saved = "last saved " + unixMs(r.SavedUnixMs)
	}
	return "popularity snapshot: " + restored + ", " + saved
}

// seconds is s seconds as a Duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
