package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"vodcluster/smm/bound"
)

// WriteTable prints the results side by side, one row per run, after a
// line giving the cluster's total disk (the capacity of the bounds), with
// a site-aware column when the runs have sites, then their table of sites.
// Bytes are in TB (10^12), decision times in ns.
func WriteTable(w io.Writer, rs []Result) error {
	if len(rs) > 0 {
		fmt.Fprintf(w, "cluster disk %d bytes (%.2f TB)%s\n", rs[0].DiskBytes, float64(rs[0].DiskBytes)/1e12, warmupNote(rs[0]))
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tstorage\t"+siteAwareCell(rs, "site-aware", "\t")+"requested\tadmitted\trefused\tno copy\tqos viol.\tpeak/mean\torigin fetches\torigin TB\tbound TB\tratio\tinstant TB\tmoves\tpeak cdp\treplica fills\tp50 ns\tp99 ns\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s%d\t%d\t%d\t%d\t%d\t%.3f\t%d\t%.2f\t%.2f\t%.3f\t%.2f\t%d\t%d\t%d\t%d\t%d\t\n",
			r.Policy, r.StoragePolicy, siteAwareCell(rs, siteAwareOf(r), "\t"), r.Requested, r.Admitted, r.Refused, r.RefusedNoCopy, r.QoSViolations,
			r.PeakToMean, r.OriginFetches, float64(r.OriginBytes)/1e12, float64(r.BoundOriginBytes)/1e12,
			r.OriginBytesRatioToBound, float64(r.BoundInstantOriginBytes)/1e12, r.PlacementMoves,
			r.PeakCDPTransfers, r.ReplicaFills, r.DecisionP50Ns, r.DecisionP99Ns)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeSiteTable(w, rs)
}

// writeSiteTable prints, after the table of a run with sites, each run's
// traffic between sites (SiteFigures); nothing without sites.
func writeSiteTable(w io.Writer, rs []Result) error {
	if len(rs) == 0 || rs[0].SiteFigures == nil {
		return nil
	}
	f := rs[0].SiteFigures
	only := ""
	if f.SiteOnly {
		only = ", viewers kept to their site"
	}
	fmt.Fprintf(w, "\n%d sites, %.0f%% of each site's requests by its own ranking%s:\n", f.Sites, 100*f.SiteLocal, only)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tstorage\tsite-aware\tadmitted\tacross sites\tratio\tstreamed TB\tacross sites TB\tratio\torigin TB\t")
	for _, r := range rs {
		if r.SiteFigures == nil {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%.4f\t%.2f\t%.2f\t%.4f\t%.2f\t\n", r.Policy, r.StoragePolicy, r.SiteAware,
			r.Admitted, r.SessionsAcrossSites, r.AcrossSitesRatio, float64(r.StreamedBytes)/1e12,
			float64(r.BytesAcrossSites)/1e12, r.BytesAcrossSitesRatio, float64(r.OriginBytes)/1e12)
	}
	return tw.Flush()
}

// siteAwareCell returns cell followed by sep when the runs have sites
// (their rows share policy and storage policy, --site-aware tells them
// apart), "" without sites.
func siteAwareCell(rs []Result, cell, sep string) string {
	if len(rs) == 0 || rs[0].SiteFigures == nil {
		return ""
	}
	return cell + sep
}

// siteAwareOf returns what knew the sites in run r, "" without sites.
func siteAwareOf(r Result) string {
	if r.SiteFigures == nil {
		return ""
	}
	return r.SiteAware
}

func warmupNote(r Result) string {
	if r.WarmupDays == 0 {
		return ", measured from empty disks"
	}
	return fmt.Sprintf(", measured after %d warm-up day(s)", r.WarmupDays)
}

// WriteMarkdown prints the results as a Markdown table (for the docs):
// the scheduling columns, then the storage ones.
func WriteMarkdown(w io.Writer, rs []Result) error {
	var b strings.Builder
	b.WriteString("| policy | storage | " + siteAwareCell(rs, "site-aware", " | ") + "requested | admitted | refused | no copy | QoS violations | peak/mean | origin fetches | origin TB | bound TB | ratio to bound | instant bound TB | placement moves | peak CDP | replica fills | p50 ns | p99 ns |\n")
	b.WriteString("|---|---|" + siteAwareCell(rs, "---", "|") + "--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %s | %s%d | %d | %d | %d | %d | %.3f | %d | %.2f | %.2f | %.3f | %.2f | %d | %d | %d | %d | %d |\n",
			r.Policy, r.StoragePolicy, siteAwareCell(rs, siteAwareOf(r), " | "), r.Requested, r.Admitted, r.Refused, r.RefusedNoCopy, r.QoSViolations,
			r.PeakToMean, r.OriginFetches, float64(r.OriginBytes)/1e12, float64(r.BoundOriginBytes)/1e12,
			r.OriginBytesRatioToBound, float64(r.BoundInstantOriginBytes)/1e12, r.PlacementMoves,
			r.PeakCDPTransfers, r.ReplicaFills, r.DecisionP50Ns, r.DecisionP99Ns)
	}
	if len(rs) > 0 && rs[0].SiteFigures != nil {
		b.WriteString("\n| policy | storage | site-aware | admitted | across sites | ratio | streamed TB | across sites TB | ratio | origin TB |\n")
		b.WriteString("|---|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, r := range rs {
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %.4f | %.2f | %.2f | %.4f | %.2f |\n", r.Policy, r.StoragePolicy, r.SiteAware,
				r.Admitted, r.SessionsAcrossSites, r.AcrossSitesRatio, float64(r.StreamedBytes)/1e12,
				float64(r.BytesAcrossSites)/1e12, r.BytesAcrossSitesRatio, float64(r.OriginBytes)/1e12)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints the results as a JSON array, one object per run.
func WriteJSON(w io.Writer, rs []Result) error {
	if rs == nil {
		rs = []Result{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rs)
}

// WriteTraceCSV writes the request trace as the CSV `vodcluster bound`
// reads (bound.CSVHeader): time_s (when the request reached its node, or
// was refused), title, bytes, node index (-1 when refused), fill (the
// node filled the title from the origin), end_s (when the session stopped
// playing; 0 when refused; time_s for a fill streamed through unkept,
// which held no disk room: TraceRecord).
func WriteTraceCSV(w io.Writer, tr []TraceRecord) error {
	cw, err := bound.NewCSVWriter(w)
	if err != nil {
		return err
	}
	for _, t := range tr {
		rec := bound.Record{Time: t.T, Title: t.Title, Bytes: t.Bytes, Node: strconv.Itoa(t.Node), Fill: t.Fill, End: t.End}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	return cw.Flush()
}

// WriteSVG draws each node's utilization over the simulated time as one
// line per node (gaps while a node is down), hours on the x axis and
// 0..100% on the y axis.
func WriteSVG(w io.Writer, s *LoadSeries) error {
	if s == nil || len(s.Times) == 0 {
		return fmt.Errorf("sim: no load samples to plot")
	}
	const (
		width, height = 1000.0, 520.0
		left, right   = 60.0, 150.0
		top, bottom   = 40.0, 50.0
	)
	pw, ph := width-left-right, height-top-bottom
	tmax := s.Times[len(s.Times)-1]
	if tmax <= 0 {
		tmax = 1
	}
	x := func(t float64) float64 { return left + pw*t/tmax }
	y := func(u float64) float64 { return top + ph*(1-math.Min(u, 1.05)/1.05) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="24" font-size="16">node utilization (reserved bit/s ÷ capacity), policy %s</text>`+"\n", left, xmlEscape(s.Policy))
	for _, u := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="end">%.0f%%</text>`+"\n",
			left, y(u), left+pw, y(u), left-6, y(u)+4, u*100)
	}
	step := 3600.0 * math.Max(1, math.Ceil(tmax/3600/24))
	for t := 0.0; t <= tmax+1; t += step {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/><text x="%.1f" y="%.1f" text-anchor="middle">%.0fh</text>`+"\n",
			x(t), top, x(t), top+ph, x(t), top+ph+18, t/3600)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">hours since start</text>`+"\n", left+pw/2, height-8)
	for i, name := range s.Nodes {
		color := fmt.Sprintf("hsl(%d,70%%,40%%)", (i*360)/max(1, len(s.Nodes)))
		b.WriteString(`<path fill="none" stroke-width="1.2" stroke="` + color + `" d="`)
		pen := false
		for k, t := range s.Times {
			u := float64(s.Util[i][k])
			if math.IsNaN(u) {
				pen = false
				continue
			}
			if pen {
				fmt.Fprintf(&b, "L%.1f %.1f ", x(t), y(u))
			} else {
				fmt.Fprintf(&b, "M%.1f %.1f ", x(t), y(u))
				pen = true
			}
		}
		b.WriteString(`"/>` + "\n")
		if i < 40 {
			ly := top + float64(i)*12
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/><text x="%.1f" y="%.1f" font-size="10">%s</text>`+"\n",
				left+pw+10, ly, left+pw+28, ly, color, left+pw+32, ly+4, xmlEscape(name))
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func xmlEscape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	return r.Replace(s)
}
