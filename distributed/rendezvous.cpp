// ember/distributed/rendezvous.cpp — rank 0 hands bytes to the other ranks over TCP (see rendezvous.h).
//
// The exchange, per non-zero rank:  rank r -> 0: "EMBR" rank size n (4 x int32, little end)
//                                   0 -> rank r: "EMBR" status, then n bytes when status is 0
#include "distributed/rendezvous.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "distributed/process_group.h"

namespace ember::distributed {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kMagic[4] = {'E', 'M', 'B', 'R'};

struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  ~Fd() { if (fd >= 0) ::close(fd); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
};

int ms_left(Clock::time_point until) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
  return left > 0 ? static_cast<int>(std::min<int64_t>(left, 1 << 30)) : 0;
}

// Reads or writes exactly n bytes before `until`; false on timeout or a closed connection.
bool transfer(int fd, void* buf, size_t n, bool write, Clock::time_point until) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    pollfd pfd{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
    if (::poll(&pfd, 1, ms_left(until)) <= 0) return false;
    const ssize_t k = write ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

std::string where(const std::string& addr, int port) { return addr + ":" + std::to_string(port); }

}  // namespace

void rendezvous_bytes(const std::string& addr, int port, int rank, int size, void* bytes, size_t n,
                      double timeout_s) {
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(timeout_s));
  EMBER_CHECK_T(DistError, port > 0 && port < 65536, "dist rendezvous: MASTER_PORT ", port,
                " is not a TCP port (1..65535)");
  if (rank == 0) {
    int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
    const bool v6 = fd >= 0;
    if (!v6) fd = ::socket(AF_INET, SOCK_STREAM, 0);
    Fd server(fd);
    EMBER_CHECK_T(DistError, server.fd >= 0, "dist rendezvous: socket() failed: ", std::strerror(errno));
    const int one = 1, zero = 0;
    ::setsockopt(server.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc;
    if (v6) {
      ::setsockopt(server.fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // IPv4 too
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_addr = in6addr_any;
      a.sin6_port = htons(static_cast<uint16_t>(port));
      rc = ::bind(server.fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_ANY);
      a.sin_port = htons(static_cast<uint16_t>(port));
      rc = ::bind(server.fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    EMBER_CHECK_T(DistError, rc == 0 && ::listen(server.fd, 128) == 0, "dist rendezvous: rank 0 "
                  "cannot listen on port ", port, " (MASTER_PORT): ", std::strerror(errno),
                  ". Choose a free port");
    std::vector<bool> arrived(static_cast<size_t>(size), false);
    arrived[0] = true;
    for (int pending = size - 1; pending > 0;) {
      pollfd pfd{server.fd, POLLIN, 0};
      if (::poll(&pfd, 1, ms_left(until)) <= 0) {
        std::string missing;
        for (int r = 1; r < size; ++r)
          if (!arrived[static_cast<size_t>(r)]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        throw DistError(ember::detail::concat("dist rendezvous: rank(s) ", missing, " did not connect to "
                                       "rank 0 on port ", port, " within ", timeout_s,
                                       " s: are they started, with MASTER_ADDR pointing here?"));
      }
      Fd conn(::accept(server.fd, nullptr, nullptr));
      if (conn.fd < 0) continue;
      int32_t hello[4] = {};
      if (!transfer(conn.fd, hello, sizeof hello, false, until) || std::memcmp(hello, kMagic, 4) != 0)
        continue;  // not one of ours (a port scanner, a stale connection): ignore it
      int32_t reply[2] = {};
      std::memcpy(reply, kMagic, 4);
      std::string problem;
      if (hello[2] != size) problem = ember::detail::concat("it was started with WORLD_SIZE=", hello[2], ", rank 0 with ", size);
      else if (hello[1] <= 0 || hello[1] >= size) problem = ember::detail::concat("its RANK ", hello[1], " is outside 1..", size - 1);
      else if (arrived[static_cast<size_t>(hello[1])]) problem = ember::detail::concat("rank ", hello[1], " connected twice (two processes with the same RANK?)");
      else if (static_cast<size_t>(hello[3]) != n) problem = "it expects another id size (a different build of ember?)";
      reply[1] = problem.empty() ? 0 : 1;
      transfer(conn.fd, reply, sizeof reply, true, until);
      EMBER_CHECK_T(DistError, problem.empty(), "dist rendezvous: rank 0 refused a rank: ", problem);
      EMBER_CHECK_T(DistError, transfer(conn.fd, bytes, n, true, until), "dist rendezvous: "
                    "sending the id to rank ", hello[1], " failed: ", std::strerror(errno));
      arrived[static_cast<size_t>(hello[1])] = true;
      --pending;
    }
    return;
  }
  // Rank r > 0: connect (rank 0 may not listen yet: retry), say who we are, receive.
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  std::string last_error = "no attempt";
  for (;;) {
    addrinfo* found = nullptr;
    const int gai = ::getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &found);
    EMBER_CHECK_T(DistError, gai == 0, "dist rendezvous: MASTER_ADDR ", addr, " cannot be resolved: ",
                  gai_strerror(gai));
    for (addrinfo* a = found; a; a = a->ai_next) {
      Fd s(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
      if (s.fd < 0) continue;
      if (::connect(s.fd, a->ai_addr, a->ai_addrlen) != 0) {
        last_error = std::strerror(errno);
        continue;
      }
      ::freeaddrinfo(found);
      found = nullptr;
      int32_t hello[4] = {0, rank, size, static_cast<int32_t>(n)};
      std::memcpy(hello, kMagic, 4);
      int32_t reply[2] = {};
      EMBER_CHECK_T(DistError, transfer(s.fd, hello, sizeof hello, true, until) &&
                                   transfer(s.fd, reply, sizeof reply, false, until),
                    "dist rendezvous: rank ", rank, " connected to rank 0 at ", where(addr, port),
                    " but the exchange did not finish within ", timeout_s, " s");
      EMBER_CHECK_T(DistError, reply[1] == 0, "dist rendezvous: rank 0 at ", where(addr, port),
                    " refused rank ", rank, " (WORLD_SIZE ", size, "): see rank 0's message");
      EMBER_CHECK_T(DistError, transfer(s.fd, bytes, n, false, until), "dist rendezvous: rank ",
                    rank, " did not receive the id from rank 0 at ", where(addr, port));
      return;
    }
    if (found) ::freeaddrinfo(found);
    EMBER_CHECK_T(DistError, ms_left(until) > 0, "dist rendezvous: rank ", rank, " could not reach "
                  "rank 0 at ", where(addr, port), " (MASTER_ADDR:MASTER_PORT) within ", timeout_s,
                  " s: ", last_error);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace ember::distributed
