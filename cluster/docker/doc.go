// Package docker is ratelab's docker cluster provider: it starts a Redis Cluster of P x (1+R)
// redis-server containers through testcontainers-go, forms it with the same code as the local
// provider (cluster.Adopt) and injects process faults through the Docker API: Kill is a
// container kill with SIGKILL, Pause/Resume are docker pause/unpause (the cgroup freezer: the
// node keeps its sockets and answers nothing), Restart starts the same container again (its
// nodes.conf survives in the container's filesystem, so the node keeps its ID).
//
// The containers use host networking: each node listens on 127.0.0.1 on a free port picked by
// this process (bus port +10000) and announces 127.0.0.1, so clients outside the containers
// follow MOVED and ASK to addresses they can reach, and no port mapping hides the real port.
// That needs a Docker engine on this machine (Linux; Docker Desktop's host network is the VM's).
//
// Ryuk, testcontainers' garbage-collector container, is switched off (its image would have to be
// pulled, which fails where no registry is reachable); Close removes the containers instead, and
// Start removes containers left by a ratelab process that no longer runs (label
// ratelab.owner-pid). The image defaults to the official redis:7; BuildLocalImage builds a
// FROM scratch image from the installed redis-server for machines without registry access.
//
// testcontainers' own log lines (registry auth lookups, container lifecycle, the Docker engine
// banner) are debug output: they reach Options.Cluster.Logf only with Options.Debug, and are
// dropped otherwise; an error testcontainers returns still comes back from Start, with the last
// lines it logged for that node. To catch the lines it writes through its process-wide default
// logger, Start installs one (testcontainers' log.SetDefault) that forwards to the Starts with
// Debug in progress.
//
// The package never pulls an image implicitly other than Options.Image, never publishes a port
// and never generates load.
package docker
