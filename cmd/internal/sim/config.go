package sim

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"vodcluster/cmd/internal/durflag"
	"vodcluster/cmd/internal/yamlcfg"
	"vodcluster/lsm"
	"vodcluster/smm"
)

// Config is a simulation: demand, cluster, origin, failures, and the
// policies to compare. Start from Default; LoadFile overlays a YAML file
// (unknown keys are errors). Durations in YAML are Go durations ("90s")
// or whole days and then, optionally, one ("2d", "1d12h").
type Config struct {
	Seed     uint64   `yaml:"seed"`     // seeds demand, failures and twos; same seed, same run
	Days     int      `yaml:"days"`     // simulated days, >= 1
	Policies []string `yaml:"policies"` // scheduling policies to run; empty = all of lsm.Policies()

	// StoragePolicy is the storage policy, by smm name (smm.NewStorage:
	// the eviction policy of every node's disk and the planner that comes
	// with it; gdsf, the default, with the Replicator).
	StoragePolicy string `yaml:"storage_policy"`
	// Storage tunes the storage policies (planner choice, Replicator
	// parameters, pins); the zero value is smm's defaults.
	Storage smm.StorageConfig `yaml:"-"`
	// StoragePolicies, when not empty, are run each with every scheduling
	// policy instead of StoragePolicy alone (the side-by-side table).
	StoragePolicies []string `yaml:"storage_policies"`
	// PlanInterval is how often the planner is asked for prefetches and
	// evictions.
	PlanInterval time.Duration `yaml:"plan_interval"`
	// Planner, when set, builds the storage planner for one run instead of
	// the storage policy's own.
	Planner func() smm.Planner `yaml:"-"`
	// WarmupDays are simulated but not measured: every figure except QoS
	// violations and the load plot counts the requests made, and the
	// origin transfers started, from day WarmupDays on (0: all of the
	// run, from empty disks). Must be below Days.
	WarmupDays int `yaml:"warmup_days"`

	Scheduler SchedulerParams `yaml:"scheduler"`
	Demand    Demand          `yaml:"demand"`
	Cluster   Cluster         `yaml:"cluster"`
	CDP       CDP             `yaml:"cdp"`
	Failures  Failures        `yaml:"failures"`
	// Sites splits nodes and viewers into sites (sites.go); by default
	// there are none.
	Sites Sites `yaml:"sites"`

	// SampleInterval is the period of the load samples behind peak-to-mean
	// and the plot.
	SampleInterval time.Duration `yaml:"sample_interval"`
}

// SchedulerParams are the lsm parameters the simulator exposes (see
// lsm.Config for their meaning). A nil field keeps lsm's default; a set
// one is passed as it is, 0 included (a = 0, disk_pressure = 0,
// slow_start = 0 and origin_channels = 0 are meaningful; values lsm
// cannot take are errors).
type SchedulerParams struct {
	A          *float64       `yaml:"a"`
	B          *float64       `yaml:"b"`
	Normal     *float64       `yaml:"normal"`
	Overload   *float64       `yaml:"overload"`
	SlowStart  *time.Duration `yaml:"slow_start"`
	CHBLFactor *float64       `yaml:"chbl_factor"`
	// DiskPressure is lall's charge for a fill per unit of disk in use.
	DiskPressure *float64 `yaml:"disk_pressure"`
	// FillRefBps is lall's reference session of the fill charge, bit/s.
	FillRefBps *int64   `yaml:"fill_ref_bps"`
	LARDLow    *float64 `yaml:"lard_low"`
	LARDHigh   *float64 `yaml:"lard_high"`
	// OriginChannels is what lsm is told of the origin's channels
	// (lsm.Config.OriginChannels); nil: the CDP's channels, as the manager
	// tells it; 0: lall does not take the origin into account.
	OriginChannels *int `yaml:"origin_channels"`
	// QueueWait is how long a request with no node waits in the FCFS queue
	// before it is refused (the manager's queue deadline).
	QueueWait time.Duration `yaml:"queue_wait"`
}

// Demand is what subscribers ask for.
type Demand struct {
	Subscribers int `yaml:"subscribers"`
	// SessionsPerSubscriber is the mean number of sessions a subscriber
	// starts per day.
	SessionsPerSubscriber float64 `yaml:"sessions_per_subscriber"`
	Titles                int     `yaml:"titles"`     // catalog size at the start
	ZipfAlpha             float64 `yaml:"zipf_alpha"` // popularity of the title of rank k is 1/k^alpha
	// Hourly is the relative arrival rate at each hour of the day (24
	// values, linearly interpolated between hours); the evening peak.
	Hourly []float64 `yaml:"hourly"`
	// EarlyAbandon is the share of sessions that stop within minutes;
	// their length is exponential with mean EarlyAbandonMean.
	EarlyAbandon     float64       `yaml:"early_abandon"`
	EarlyAbandonMean time.Duration `yaml:"early_abandon_mean"`
	// The other sessions watch a log-normal time (median WatchMedian,
	// shape WatchSigma: the long tail), at most the title's duration.
	WatchMedian time.Duration `yaml:"watch_median"`
	WatchSigma  float64       `yaml:"watch_sigma"`
	// Kinds of title: duration and bitrate with their shares.
	Kinds []TitleKind `yaml:"kinds"`
	// NewTitlesPerDay titles are added each day at NewTitleHour, each at
	// a popularity rank drawn uniformly from 1..NewTitleTopRank.
	NewTitlesPerDay int     `yaml:"new_titles_per_day"`
	NewTitleHour    float64 `yaml:"new_title_hour"`
	NewTitleTopRank int     `yaml:"new_title_top_rank"`
	// DriftSigma is the day-to-day drift of popularity: each title's
	// weight is multiplied by exp(DriftSigma * N(0,1)) at midnight.
	DriftSigma float64 `yaml:"drift_sigma"`
}

// TitleKind is a class of titles.
type TitleKind struct {
	Name       string        `yaml:"name"`
	Share      float64       `yaml:"share"`        // share of the catalog, > 0 (normalised)
	BitrateBps int64         `yaml:"bitrate_bps"`  // bit/s
	MinLength  time.Duration `yaml:"min_duration"` // durations uniform in [min, max]
	MaxLength  time.Duration `yaml:"max_duration"`
}

// Cluster is the VOD nodes.
type Cluster struct {
	Nodes []NodeClass `yaml:"nodes"`
	// DiskShare is the nodes' disks together as a share of the catalog's
	// bytes at the start, in (0, 1]; each node's disk is in proportion to
	// its class's DiskWeight.
	DiskShare float64 `yaml:"disk_share"`
}

// NodeClass is a group of identical nodes.
type NodeClass struct {
	Count      int     `yaml:"count"`
	EgressBps  int64   `yaml:"egress_bps"`  // bit/s
	DiskWeight float64 `yaml:"disk_weight"` // relative disk size
	Weight     int     `yaml:"weight"`      // scheduling weight, 0 = lsm default (100); at most lsm.MaxWeight
}

// CDP is the origin's upstream link.
type CDP struct {
	Channels   int           `yaml:"channels"`    // concurrent transfers, >= 1
	SetupDelay time.Duration `yaml:"setup_delay"` // per transfer, before the first byte
	ChannelBps int64         `yaml:"channel_bps"` // bit/s per transfer
	// FillWait is how long a viewer whose title must be filled waits for a
	// free channel before giving up (refused_no_copy).
	FillWait time.Duration `yaml:"fill_wait"`
}

// Failures are node outages.
type Failures struct {
	PerDay   float64       `yaml:"per_day"`   // mean outages per day (Poisson)
	DownMean time.Duration `yaml:"down_mean"` // mean outage length (exponential, at least a minute)
	// KeepDisk: a node that returns still has the titles it held.
	KeepDisk bool `yaml:"keep_disk"`
}

// Default returns the default simulation: a plausible mid-size operator.
// 200,000 subscribers starting 0.5 sessions a day each (100,000 sessions)
// with an evening peak around 21:00; 5,000 titles (episodes, films, a few
// UHD films; about 25 TB), Zipf 0.9 popularity, 25 new titles a day at
// noon among the top 100; 20 nodes in three sizes (4 x 8 Gbit/s, 8 x
// 3 Gbit/s, 8 x 1.5 Gbit/s: 68 Gbit/s) whose disks together hold half of
// the catalog's bytes; an origin with 48 channels of 1 Gbit/s and a 2 s
// setup delay; two node outages a day of 30 minutes on average; no sites
// (with Sites.Count > 1, 30% of each site's requests by its own ranking).
func Default() Config {
	return Config{
		Seed:           1,
		Days:           1,
		StoragePolicy:  smm.DefaultEvictor,
		PlanInterval:   5 * time.Minute,
		SampleInterval: time.Minute,
		Scheduler:      SchedulerParams{QueueWait: 5 * time.Second},
		Demand: Demand{
			Subscribers:           200_000,
			SessionsPerSubscriber: 0.5,
			Titles:                5_000,
			ZipfAlpha:             0.9,
			Hourly: []float64{
				0.9, 0.5, 0.3, 0.2, 0.15, 0.15, 0.2, 0.35, 0.5, 0.6, 0.65, 0.7,
				0.8, 0.8, 0.75, 0.75, 0.85, 1.1, 1.5, 2.0, 2.6, 3.0, 2.6, 1.7,
			},
			EarlyAbandon:     0.35,
			EarlyAbandonMean: 3 * time.Minute,
			WatchMedian:      40 * time.Minute,
			WatchSigma:       0.9,
			Kinds: []TitleKind{
				{Name: "episode", Share: 0.45, BitrateBps: 4_000_000, MinLength: 22 * time.Minute, MaxLength: 50 * time.Minute},
				{Name: "film-hd", Share: 0.45, BitrateBps: 8_000_000, MinLength: 80 * time.Minute, MaxLength: 150 * time.Minute},
				{Name: "film-uhd", Share: 0.10, BitrateBps: 16_000_000, MinLength: 90 * time.Minute, MaxLength: 150 * time.Minute},
			},
			NewTitlesPerDay: 25,
			NewTitleHour:    12,
			NewTitleTopRank: 100,
			DriftSigma:      0.3,
		},
		Cluster: Cluster{
			Nodes: []NodeClass{
				{Count: 4, EgressBps: 8_000_000_000, DiskWeight: 3},
				{Count: 8, EgressBps: 3_000_000_000, DiskWeight: 2},
				{Count: 8, EgressBps: 1_500_000_000, DiskWeight: 1},
			},
			DiskShare: 0.5,
		},
		CDP: CDP{
			Channels:   48,
			SetupDelay: 2 * time.Second,
			ChannelBps: 1_000_000_000,
			FillWait:   10 * time.Second,
		},
		Failures: Failures{PerDay: 2, DownMean: 30 * time.Minute, KeepDisk: true},
		Sites:    Sites{Local: 0.3},
	}
}

// Validate reports the first parameter out of range, or nil, naming
// the value by its key and flag (keyName) and showing it readably
// ("cdp.setup_delay (--cdp-setup) 48h (2 days): out of [0, 1h] ...",
// "days 70: out of 1..60").
func (c *Config) Validate() error { return c.validate(nil) }

// showFunc names the value v of the key at path (yamlcfg's path, a
// list's item with its index: "demand.kinds[1].share", "sites.aware[0]",
// so that the item out of range is shown, not another with the same
// value) in a range error: "line 3: cdp.setup_delay (--cdp-setup) 2d" as
// a file writes it, "days 70" as a flag gave it.
type showFunc func(path string, v any) string

// keyValue is a value v of the key at path (showFunc) that a rule over
// several values is about.
type keyValue struct {
	path string
	v    any
}

// showEach names each of the values a rule over several values is about,
// as show names one ("line 3: demand.subscribers 1000000, line 4:
// demand.sessions_per_subscriber 30, days 3"), so that a file's are
// shown at their lines as a single value out of range is.
func showEach(show showFunc, kvs ...keyValue) string {
	shown := make([]string, len(kvs))
	for i, kv := range kvs {
		shown[i] = show(kv.path, kv.v)
	}
	return strings.Join(shown, ", ")
}

// showPlain names a value by its key and flag, readably, without a line.
func showPlain(path string, v any) string {
	return (*yamlcfg.File)(nil).Show(path, keyName(path), v)
}

// validate is Validate, each value v of the key at path named by
// show(path, v); nil is showPlain.
func (c *Config) validate(show showFunc) error {
	bad := func(format string, a ...any) error { return fmt.Errorf("sim: "+format, a...) }
	if show == nil {
		show = showPlain
	}
	d := &c.Demand
	switch {
	case c.Days < 1 || c.Days > 60:
		return bad("%s: out of 1..60", show("days", c.Days))
	case c.WarmupDays < 0 || c.WarmupDays >= c.Days:
		return bad("%s: out of 0..days-1 (days %d)", show("warmup_days", c.WarmupDays), c.Days)
	case c.PlanInterval <= 0:
		return bad("%s: must be > 0", show("plan_interval", c.PlanInterval))
	case c.SampleInterval <= 0 || c.SampleInterval > time.Hour:
		return bad("%s: out of (0, 1h]", show("sample_interval", c.SampleInterval))
	case c.Scheduler.QueueWait < 0:
		return bad("%s: must be >= 0", show("scheduler.queue_wait", c.Scheduler.QueueWait))
	case d.Subscribers < 1:
		return bad("%s: must be >= 1", show("demand.subscribers", d.Subscribers))
	case !(d.SessionsPerSubscriber > 0) || d.SessionsPerSubscriber > 100:
		return bad("%s: out of (0, 100]", show("demand.sessions_per_subscriber", d.SessionsPerSubscriber))
	case float64(d.Subscribers)*d.SessionsPerSubscriber*float64(c.Days) > 20e6:
		return bad("%s: more than 20 million sessions in the run (%.0f)", showEach(show,
			keyValue{"demand.subscribers", d.Subscribers}, keyValue{"demand.sessions_per_subscriber", d.SessionsPerSubscriber}, keyValue{"days", c.Days}),
			float64(d.Subscribers)*d.SessionsPerSubscriber*float64(c.Days))
	case d.Titles < 1 || d.Titles > 1_000_000:
		return bad("%s: out of 1..1000000", show("demand.titles", d.Titles))
	case !(d.ZipfAlpha >= 0) || d.ZipfAlpha > 3:
		return bad("%s: out of [0, 3]", show("demand.zipf_alpha", d.ZipfAlpha))
	case len(d.Hourly) != 24:
		return bad("demand.hourly needs 24 values, has %d", len(d.Hourly))
	case !(d.EarlyAbandon >= 0 && d.EarlyAbandon <= 1):
		return bad("%s: out of [0, 1]", show("demand.early_abandon", d.EarlyAbandon))
	case d.EarlyAbandonMean <= 0:
		return bad("%s: must be > 0", show("demand.early_abandon_mean", d.EarlyAbandonMean))
	case d.WatchMedian <= 0:
		return bad("%s: must be > 0", show("demand.watch_median", d.WatchMedian))
	case !(d.WatchSigma >= 0) || d.WatchSigma > 5:
		return bad("%s: out of [0, 5]", show("demand.watch_sigma", d.WatchSigma))
	case len(d.Kinds) == 0:
		return bad("no title kinds")
	case d.NewTitlesPerDay < 0 || d.NewTitlesPerDay > 100_000:
		return bad("%s: out of 0..100000", show("demand.new_titles_per_day", d.NewTitlesPerDay))
	case !(d.NewTitleHour >= 0 && d.NewTitleHour < 24):
		return bad("%s: out of [0, 24)", show("demand.new_title_hour", d.NewTitleHour))
	case d.NewTitlesPerDay > 0 && d.NewTitleTopRank < 1:
		return bad("%s: must be >= 1", show("demand.new_title_top_rank", d.NewTitleTopRank))
	case !(d.DriftSigma >= 0) || d.DriftSigma > 3:
		return bad("%s: out of [0, 3]", show("demand.drift_sigma", d.DriftSigma))
	case len(c.Cluster.Nodes) == 0:
		return bad("no node classes")
	case !(c.Cluster.DiskShare > 0 && c.Cluster.DiskShare <= 1):
		return bad("%s: out of (0, 1]", show("cluster.disk_share", c.Cluster.DiskShare))
	case c.CDP.Channels < 1 || c.CDP.Channels > 100_000:
		return bad("%s: out of 1..100000", show("cdp.channels", c.CDP.Channels))
	case c.CDP.SetupDelay < 0 || c.CDP.SetupDelay > time.Hour:
		return bad("%s: out of [0, 1h]: a viewer waits for it", show("cdp.setup_delay", c.CDP.SetupDelay))
	case c.CDP.FillWait < 0 || c.CDP.FillWait > time.Hour:
		return bad("%s: out of [0, 1h]: a viewer waits for it", show("cdp.fill_wait", c.CDP.FillWait))
	case c.CDP.ChannelBps <= 0:
		return bad("%s: must be > 0", show("cdp.channel_bps", c.CDP.ChannelBps))
	case !(c.Failures.PerDay >= 0) || c.Failures.PerDay > 1000:
		return bad("%s: out of [0, 1000]", show("failures.per_day", c.Failures.PerDay))
	case c.Failures.PerDay > 0 && c.Failures.DownMean <= 0:
		return bad("%s: must be > 0 (with failures.per_day above 0)", show("failures.down_mean", c.Failures.DownMean))
	}
	sum := 0.0
	for h, v := range d.Hourly {
		if !(v >= 0) || math.IsInf(v, 0) {
			return bad("%s (hour %d): must be >= 0 and finite", show(fmt.Sprintf("demand.hourly[%d]", h), v), h)
		}
		sum += v
	}
	if sum <= 0 {
		return bad("demand.hourly is all zero")
	}
	for i, k := range d.Kinds {
		item := func(key string) string { return fmt.Sprintf("demand.kinds[%d].%s", i, key) }
		switch {
		case k.MinLength <= 0 || k.MinLength > 24*time.Hour:
			return bad("%s (title kind %q): out of (0, 24h]", show(item("min_duration"), k.MinLength), k.Name)
		case k.MaxLength < k.MinLength || k.MaxLength > 24*time.Hour:
			return bad("%s (title kind %q): out of [min_duration %s, 24h]", show(item("max_duration"), k.MaxLength), k.Name, durflag.Readable(k.MinLength))
		case !(k.Share > 0) || math.IsInf(k.Share, 0):
			return bad("%s (title kind %q): must be > 0", show(item("share"), k.Share), k.Name)
		case k.BitrateBps <= 0:
			return bad("%s (title kind %q): must be > 0", show(item("bitrate_bps"), k.BitrateBps), k.Name)
		case k.BitrateBps > c.CDP.ChannelBps:
			return bad("%s (title kind %q): above the cdp channel rate (cdp.channel_bps %d): a fill could not keep ahead of playback", show(item("bitrate_bps"), k.BitrateBps), k.Name, c.CDP.ChannelBps)
		}
	}
	nodes := 0
	for i, n := range c.Cluster.Nodes {
		item := func(key string) string { return fmt.Sprintf("cluster.nodes[%d].%s", i, key) }
		switch {
		case n.Count < 0:
			return bad("%s (node class): must be >= 0", show(item("count"), n.Count))
		case n.EgressBps <= 0:
			return bad("%s (node class): must be > 0", show(item("egress_bps"), n.EgressBps))
		case !(n.DiskWeight > 0) || math.IsInf(n.DiskWeight, 0):
			return bad("%s (node class): must be > 0", show(item("disk_weight"), n.DiskWeight))
		case n.Weight < 0 || n.Weight > lsm.MaxWeight:
			return bad("%s (node class): out of 0..%d (0: lsm's default)", show(item("weight"), n.Weight), lsm.MaxWeight)
		}
		nodes += n.Count
	}
	if nodes < 1 || nodes > 10_000 {
		counts := make([]keyValue, len(c.Cluster.Nodes))
		for i, n := range c.Cluster.Nodes {
			counts[i] = keyValue{fmt.Sprintf("cluster.nodes[%d].count", i), n.Count}
		}
		return bad("%s: %d nodes out of 1..10000", showEach(show, counts...), nodes)
	}
	if err := c.Sites.validate(nodes, show); err != nil {
		return err
	}
	known := map[string]bool{}
	for _, p := range lsm.Policies() {
		known[p] = true
	}
	for i, p := range c.Policies {
		if !known[p] {
			return bad("%s: unknown policy (known: %v)", show(fmt.Sprintf("policies[%d]", i), p), lsm.Policies())
		}
	}
	for _, sp := range c.storagePolicies() {
		if _, err := smm.NewStorage(sp, smm.StorageConfig{}); err != nil {
			return bad("%v", err)
		}
	}
	if err := c.Scheduler.validate(show); err != nil {
		return err
	}
	if _, err := lsm.New(c.lsmConfig(lsm.DefaultPolicy)); err != nil {
		// A rule of lsm's over several values (overload below normal,
		// lard_low not below lard_high): named by the values that break it.
		if kvs := c.schedulerBlame(err); len(kvs) > 0 {
			return bad("%s: %v", showEach(show, kvs...), err)
		}
		return err
	}
	return nil
}

// schedulerBlame returns the scheduler's values set (not nil) that lsm's
// rule failing with err is about: each without which (left to lsm's
// default) lsm takes the configuration or fails with another error.
func (c *Config) schedulerBlame(err error) []keyValue {
	p := reflect.ValueOf(c.Scheduler)
	var kvs []keyValue
	for i := 0; i < p.NumField(); i++ {
		f := p.Field(i)
		if f.Kind() != reflect.Pointer || f.IsNil() {
			continue
		}
		without := *c
		w := reflect.ValueOf(&without.Scheduler).Elem()
		w.Field(i).SetZero()
		if _, e := lsm.New(without.lsmConfig(lsm.DefaultPolicy)); e == nil || e.Error() != err.Error() {
			tag, _, _ := strings.Cut(p.Type().Field(i).Tag.Get("yaml"), ",")
			kvs = append(kvs, keyValue{"scheduler." + tag, f.Elem().Interface()})
		}
	}
	return kvs
}

// lsmConfig returns the scheduler configuration for policy.
func (c *Config) lsmConfig(policy string) lsm.Config {
	l := lsm.DefaultConfig()
	l.Policy = policy
	l.Seed = c.Seed
	l.OriginChannels = c.CDP.Channels
	p := c.Scheduler
	setF := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	setF(&l.A, p.A)
	setF(&l.B, p.B)
	setF(&l.Normal, p.Normal)
	setF(&l.Overload, p.Overload)
	setF(&l.DiskPressure, p.DiskPressure)
	setF(&l.CHBLFactor, p.CHBLFactor)
	setF(&l.LARDLow, p.LARDLow)
	setF(&l.LARDHigh, p.LARDHigh)
	if p.SlowStart != nil {
		l.SlowStart = *p.SlowStart
	}
	if p.FillRefBps != nil {
		l.FillRefBps = *p.FillRefBps
	}
	if p.OriginChannels != nil {
		l.OriginChannels = *p.OriginChannels
	}
	return l
}

// validate rejects the set values lsm would read as "default"
// (0 where lsm needs a positive value): a set value means what it says.
// show names a value by its path (Config.validate).
func (p *SchedulerParams) validate(show showFunc) error {
	bad := func(path string, v any, want string) error {
		return fmt.Errorf("sim: %s: must be %s", show("scheduler."+path, v), want)
	}
	switch {
	case p.Normal != nil && !(*p.Normal > 0 && *p.Normal <= 1):
		return bad("normal", *p.Normal, "in (0, 1]")
	case p.Overload != nil && !(*p.Overload > 0 && *p.Overload <= 1):
		return bad("overload", *p.Overload, "in (0, 1]")
	case p.CHBLFactor != nil && !(*p.CHBLFactor > 1):
		return bad("chbl_factor", *p.CHBLFactor, "> 1")
	case p.LARDHigh != nil && !(*p.LARDHigh > 0):
		return bad("lard_high", *p.LARDHigh, "> 0")
	case p.FillRefBps != nil && *p.FillRefBps <= 0:
		return bad("fill_ref_bps", *p.FillRefBps, "> 0")
	case p.SlowStart != nil && *p.SlowStart < 0:
		return bad("slow_start", *p.SlowStart, ">= 0")
	case p.OriginChannels != nil && *p.OriginChannels < 0:
		return bad("origin_channels", *p.OriginChannels, ">= 0")
	}
	return nil
}

// policies returns the policies to run.
func (c *Config) policies() []string {
	if len(c.Policies) > 0 {
		return c.Policies
	}
	return lsm.Policies()
}

// storagePolicies returns the storage policies to run.
func (c *Config) storagePolicies() []string {
	if len(c.StoragePolicies) > 0 {
		return c.StoragePolicies
	}
	return []string{c.StoragePolicy}
}

// SetNodes scales the cluster to n nodes keeping the classes' proportions
// (largest remainder; every class keeps at least one node while n allows).
func (c *Config) SetNodes(n int) error {
	if n < 1 || n > 10_000 {
		return fmt.Errorf("sim: %d nodes out of 1..10000", n)
	}
	total := 0
	for _, k := range c.Cluster.Nodes {
		total += k.Count
	}
	if total == 0 {
		return fmt.Errorf("sim: no node classes to scale")
	}
	left := n
	rem := make([]float64, len(c.Cluster.Nodes))
	for i := range c.Cluster.Nodes {
		exact := float64(c.Cluster.Nodes[i].Count) * float64(n) / float64(total)
		c.Cluster.Nodes[i].Count = int(exact)
		rem[i] = exact - float64(int(exact))
		left -= int(exact)
	}
	for ; left > 0; left-- {
		best := 0
		for i := range rem {
			if rem[i] > rem[best] {
				best = i
			}
		}
		c.Cluster.Nodes[best].Count++
		rem[best] = -1
	}
	return nil
}
