#include "net/line_socket.h"

#include <algorithm>
#include <asio/post.hpp>
#include <asio/write.hpp>

namespace ward::net {

LineSocket::LineSocket(asio::local::stream_protocol::socket socket, Options options)
    : socket_(std::move(socket)), options_(options), buf_(options.read_buffer_bytes) {}

void LineSocket::SendLine(std::string line) {
  if (closed_) return;
  queued_ += line.size();
  if (queued_ > options_.max_queued_bytes) {
    OnOverflow();
    Close();
    return;
  }
  out_.push_back(std::move(line));
  if (!writing_) WriteNext();
}

void LineSocket::Close() {
  if (closed_) return;
  closed_ = true;
  asio::error_code ec;
  socket_.shutdown(asio::socket_base::shutdown_both, ec);
  socket_.close(ec);
  out_.clear();
  auto self = shared_from_this();
  asio::post(socket_.get_executor(), [self] { self->OnClosed(); });
}

void LineSocket::ReadMore() {
  auto self = shared_from_this();
  socket_.async_read_some(asio::buffer(buf_), [self](const asio::error_code& ec, size_t n) {
    if (self->closed_ || !self->Attached()) return;
    if (ec) {
      self->Close();
      return;
    }
    self->OnData(std::string_view(self->buf_.data(), n));
    if (self->closed_) return;
    if (self->close_after_write_ && self->options_.stop_reading_when_closing) return;
    self->ReadMore();
  });
}

void LineSocket::WriteNext() {
  if (out_.empty() || closed_) {
    writing_ = false;
    if (close_after_write_ && !closed_) Close();
    return;
  }
  writing_ = true;
  auto self = shared_from_this();
  asio::async_write(socket_, asio::buffer(out_.front()),
                    [self](const asio::error_code& ec, size_t n) {
                      if (self->closed_) return;
                      if (ec) {
                        self->Close();
                        return;
                      }
                      self->queued_ -= std::min(self->queued_, n);
                      self->out_.pop_front();
                      self->WriteNext();
                    });
}

}  // namespace ward::net
