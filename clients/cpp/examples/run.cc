// Runs one command in a fresh sandbox through `ward serve` and prints its output.
//   ward_run_example WORKSPACE COMMAND [ARGS...]
// Start the daemon first: `ward serve &`.
#include <iostream>

#include "../ward_client.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " WORKSPACE COMMAND [ARGS...]\n";
    return 2;
  }
  ward::client::Client client;
  if (!client.Connect()) {
    std::cerr << "cannot reach ward serve: " << client.last_error().message << "\n";
    return 1;
  }
  // Output arrives as notifications while the command runs.
  client.OnNotification([](const std::string& method, const nlohmann::json& params) {
    if (method != "exec.output") return;
    auto& os = params["stream"] == "stderr" ? std::cerr : std::cout;
    os << params["data"].get<std::string>() << std::flush;
  });
  auto sandbox = client.CreateSandbox(argv[1], {{"ttl_s", 600}});
  if (!sandbox.ok()) {
    std::cerr << "sandbox.create: " << sandbox.error->kind << ": " << sandbox.error->message
              << "\n";
    return 1;
  }
  std::string id = sandbox.result["sandbox_id"];
  std::vector<std::string> command(argv + 2, argv + argc);
  auto run = client.Run(id, command, {{"timeout_ms", 600000}});
  client.Destroy(id);
  if (!run.ok()) {
    std::cerr << "exec.run: " << run.error->kind << ": " << run.error->message << "\n";
    return 1;
  }
  const auto& r = run.result;
  std::cerr << "[" << r["status"].get<std::string>() << "]\n";
  if (r["status"] == "exited" && r["exit_code"].is_number_integer()) return r["exit_code"];
  return 125;
}
