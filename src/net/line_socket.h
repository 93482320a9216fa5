// One connection of a JSON-lines server on a unix socket (ward serve's API, a run's approval
// socket): the reads, a bounded queue of lines to write, and closing. What a line means, and
// how lines are cut and bounded, is the server's (OnData).
#pragma once

#include <asio/local/stream_protocol.hpp>
#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ward::net {

class LineSocket : public std::enable_shared_from_this<LineSocket> {
 public:
  struct Options {
    size_t read_buffer_bytes = 16384;
    // Written but not yet taken by the peer: beyond it the peer does not read its replies and
    // is dropped (OnOverflow, then closed).
    size_t max_queued_bytes = 1 << 20;
    // Whether reading stops once a refusal is queued (CloseAfterWrite).
    bool stop_reading_when_closing = false;
  };

  LineSocket(asio::local::stream_protocol::socket socket, Options options);
  virtual ~LineSocket() = default;

  void Start() { ReadMore(); }
  // Queues one line (with its newline) to write, in order.
  void SendLine(std::string line);
  // Closes once every queued line is written.
  void CloseAfterWrite() { close_after_write_ = true; }
  void Close();
  bool closed() const { return closed_; }
  bool closing() const { return closed_ || close_after_write_; }

 protected:
  // The bytes one read brought.
  virtual void OnData(std::string_view data) = 0;
  // After Close, from the socket's executor.
  virtual void OnClosed() = 0;
  // The queue went over its bound; the connection closes next.
  virtual void OnOverflow() {}
  // False once the server let go of the connection: reads are then ignored.
  virtual bool Attached() const { return true; }

 private:
  void ReadMore();
  void WriteNext();

  asio::local::stream_protocol::socket socket_;
  Options options_;
  std::vector<char> buf_;
  std::deque<std::string> out_;
  size_t queued_ = 0;
  bool writing_ = false;
  bool closed_ = false;
  bool close_after_write_ = false;
};

}  // namespace ward::net
