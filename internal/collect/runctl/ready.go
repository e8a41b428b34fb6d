package runctl

import (
	"net"
	"os"
	"strings"
	"sync"
)

// notifySocket is $NOTIFY_SOCKET as sonde started: systemd's readiness
// protocol (sd_notify(3)), which service managers, scripts and sonde's
// own tests use to learn when a measurement has begun. It is taken out of
// the environment at once, so no command sonde starts (a measured
// command, a held child, a helper) inherits it and speaks for sonde.
var notifySocket = takeNotifySocket()

func takeNotifySocket() string {
	v := os.Getenv("NOTIFY_SOCKET")
	os.Unsetenv("NOTIFY_SOCKET")
	return v
}

var readyOnce sync.Once

// Ready tells whoever started sonde that the measurement has begun: its
// events are open and counting (a tool's programs attached, record's
// events enabled, the agent listening). It sends READY=1 to
// $NOTIFY_SOCKET once per process; later calls do nothing, and without
// the variable it does nothing. A failure to send is not the
// measurement's: it is ignored, as sd_notify's callers do.
func Ready() {
	readyOnce.Do(func() { notify(notifySocket, "READY=1") })
}

// notify sends state to the datagram socket at path; a leading @ names
// an abstract socket. Other address families (vsock:) are not spoken.
func notify(path, state string) {
	if path == "" || !(strings.HasPrefix(path, "/") || strings.HasPrefix(path, "@")) {
		return
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return
	}
	defer c.Close()
	c.Write([]byte(state))
}
