# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_fleet_dispatch_global_optspecs
    string join \n root= key-file= machine= state-dir= json durability= h/help V/version
end

function __fish_fleet_dispatch_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_fleet_dispatch_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_fleet_dispatch_using_subcommand
    set -l cmd (__fish_fleet_dispatch_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -l root -d 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -l key-file -d 'The fleet key file [default: ~/.claude/fleet-dispatch.key]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -l machine -d 'This machine\'s name [default: the host name]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -l state-dir -d 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -l durability -d 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments\' work) [default: full]' -r -f -a "full\t'Every job\'s start and result are flushed before the next step, and a queued job\'s folder entry before `enqueue` returns'
relaxed\t'The listener flushes its ledger at most every 20 ms and `enqueue` flushes nothing: a crash of the listener changes nothing, but a power loss may run a job started in the last moments a second time, or lose one queued in the last seconds (or leave it torn, and then rejected)'"
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -l json -d 'Print one JSON document on stdout, for programs'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -s V -l version -d 'Print version'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -f -a "keygen" -d 'Create the fleet key file (32 random bytes as 64 hex characters, mode 600)'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -f -a "enqueue" -d 'Sign a job and drop it into a target\'s inbox; prints its id'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -f -a "listen" -d 'Run this machine\'s jobs: drain its inbox one job at a time'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -f -a "result" -d 'Show a job\'s verified result'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -f -a "cancel" -d 'Ask a target to stop a job (running or still queued)'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -f -a "sweep" -d 'Remove stale cancel markers and our stale temp files (for cron)'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -f -a "status" -d 'Show what is running, queued, cancelled and finished, per target'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -f -a "verify-marker" -d 'Explain whether a cancel marker would be accepted, and why'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -f -a "demo" -d 'Run the whole lane on a temporary folder and narrate each step'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand keygen" -l root -d 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand keygen" -l key-file -d 'The fleet key file [default: ~/.claude/fleet-dispatch.key]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand keygen" -l machine -d 'This machine\'s name [default: the host name]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand keygen" -l state-dir -d 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand keygen" -l durability -d 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments\' work) [default: full]' -r -f -a "full\t'Every job\'s start and result are flushed before the next step, and a queued job\'s folder entry before `enqueue` returns'
relaxed\t'The listener flushes its ledger at most every 20 ms and `enqueue` flushes nothing: a crash of the listener changes nothing, but a power loss may run a job started in the last moments a second time, or lose one queued in the last seconds (or leave it torn, and then rejected)'"
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand keygen" -l force -d 'Replace an existing key file'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand keygen" -l json -d 'Print one JSON document on stdout, for programs'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand keygen" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -s t -l target -d 'The machine that should run the job' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l job-id -d 'The job id [default: generated, YYYYMMDD-HHMMSS-<16 hex>]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l cwd -d 'Working directory on the target' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l env -d 'An environment variable for the job (repeatable)' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l timeout -d 'Stop the job after this long (e.g. 30m, 2h) [default: no limit]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l grace -d 'Time between the graceful stop and the forced kill [default: 10s]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l priority -d 'Drain priority' -r -f -a "normal\t'The default'
high\t'Before every normal job'"
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l label -d 'A short description shown by status and results' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l interrupt -d 'Stop and steer: queue this job at high priority, then cancel JOBID' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l wait-timeout -d 'Give up waiting after this long (exit 124)' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l via -d 'Send the job to the target\'s `listen --http` at this URL (http://HOST:PORT); the shared folder is used only when it cannot be reached' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l root -d 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l key-file -d 'The fleet key file [default: ~/.claude/fleet-dispatch.key]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l machine -d 'This machine\'s name [default: the host name]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l state-dir -d 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l durability -d 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments\' work) [default: full]' -r -f -a "full\t'Every job\'s start and result are flushed before the next step, and a queued job\'s folder entry before `enqueue` returns'
relaxed\t'The listener flushes its ledger at most every 20 ms and `enqueue` flushes nothing: a crash of the listener changes nothing, but a power loss may run a job started in the last moments a second time, or lose one queued in the last seconds (or leave it torn, and then rejected)'"
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l wait -d 'Wait for the result and exit with the job\'s exit code'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -l json -d 'Print one JSON document on stdout, for programs'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand enqueue" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand listen" -l poll-interval -d 'How often to rescan the inbox and check for cancel markers [default: 2s]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand listen" -l settle -d 'How long a file that does not parse may stay unchanged before it is rejected' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand listen" -l max-job-age -d 'Jobs older than this are refused as stale' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand listen" -l governor-file -d 'Governor file: first word GREEN, YELLOW (only high jobs run) or RED (none)' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand listen" -l http -d 'Also take jobs and cancels over HTTP on ADDR (HOST:PORT; a bare port means 127.0.0.1:PORT). Plain HTTP, no TLS [default: off]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand listen" -l root -d 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand listen" -l key-file -d 'The fleet key file [default: ~/.claude/fleet-dispatch.key]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand listen" -l machine -d 'This machine\'s name [default: the host name]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand listen" -l state-dir -d 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand listen" -l durability -d 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments\' work) [default: full]' -r -f -a "full\t'Every job\'s start and result are flushed before the next step, and a queued job\'s folder entry before `enqueue` returns'
relaxed\t'The listener flushes its ledger at most every 20 ms and `enqueue` flushes nothing: a crash of the listener changes nothing, but a power loss may run a job started in the last moments a second time, or lose one queued in the last seconds (or leave it torn, and then rejected)'"
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand listen" -l once -d 'Drain the inbox once and exit'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand listen" -l json -d 'Print one JSON document on stdout, for programs'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand listen" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand result" -s t -l target -d 'The machine that ran the job' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand result" -l job-id -d 'The job' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand result" -l wait-timeout -d 'Give up waiting after this long (exit 124)' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand result" -l root -d 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand result" -l key-file -d 'The fleet key file [default: ~/.claude/fleet-dispatch.key]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand result" -l machine -d 'This machine\'s name [default: the host name]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand result" -l state-dir -d 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand result" -l durability -d 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments\' work) [default: full]' -r -f -a "full\t'Every job\'s start and result are flushed before the next step, and a queued job\'s folder entry before `enqueue` returns'
relaxed\t'The listener flushes its ledger at most every 20 ms and `enqueue` flushes nothing: a crash of the listener changes nothing, but a power loss may run a job started in the last moments a second time, or lose one queued in the last seconds (or leave it torn, and then rejected)'"
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand result" -l wait -d 'Wait for the result and exit with the job\'s exit code'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand result" -l json -d 'Print one JSON document on stdout, for programs'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand result" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand cancel" -s t -l target -d 'The machine running the job' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand cancel" -l job-id -d 'The job to stop' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand cancel" -l wait-timeout -d 'Give up waiting after this long (exit 124)' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand cancel" -l via -d 'Send the marker to the target\'s `listen --http` at this URL (http://HOST:PORT); the shared folder is used only when it cannot be reached' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand cancel" -l root -d 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand cancel" -l key-file -d 'The fleet key file [default: ~/.claude/fleet-dispatch.key]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand cancel" -l machine -d 'This machine\'s name [default: the host name]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand cancel" -l state-dir -d 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand cancel" -l durability -d 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments\' work) [default: full]' -r -f -a "full\t'Every job\'s start and result are flushed before the next step, and a queued job\'s folder entry before `enqueue` returns'
relaxed\t'The listener flushes its ledger at most every 20 ms and `enqueue` flushes nothing: a crash of the listener changes nothing, but a power loss may run a job started in the last moments a second time, or lose one queued in the last seconds (or leave it torn, and then rejected)'"
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand cancel" -l wait -d 'Wait until the job has stopped (or finished first)'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand cancel" -l json -d 'Print one JSON document on stdout, for programs'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand cancel" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand sweep" -s t -l target -d 'Sweep this target [default: this machine]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand sweep" -l max-age -d 'Remove markers whose file is older than this' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand sweep" -l root -d 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand sweep" -l key-file -d 'The fleet key file [default: ~/.claude/fleet-dispatch.key]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand sweep" -l machine -d 'This machine\'s name [default: the host name]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand sweep" -l state-dir -d 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand sweep" -l durability -d 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments\' work) [default: full]' -r -f -a "full\t'Every job\'s start and result are flushed before the next step, and a queued job\'s folder entry before `enqueue` returns'
relaxed\t'The listener flushes its ledger at most every 20 ms and `enqueue` flushes nothing: a crash of the listener changes nothing, but a power loss may run a job started in the last moments a second time, or lose one queued in the last seconds (or leave it torn, and then rejected)'"
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand sweep" -l all -d 'Sweep every target under the root'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand sweep" -l dry-run -d 'Say what would be removed, remove nothing'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand sweep" -l json -d 'Print one JSON document on stdout, for programs'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand sweep" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand status" -s t -l target -d 'Show this target [default: this machine, or every target if it has no folder]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand status" -l root -d 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand status" -l key-file -d 'The fleet key file [default: ~/.claude/fleet-dispatch.key]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand status" -l machine -d 'This machine\'s name [default: the host name]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand status" -l state-dir -d 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand status" -l durability -d 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments\' work) [default: full]' -r -f -a "full\t'Every job\'s start and result are flushed before the next step, and a queued job\'s folder entry before `enqueue` returns'
relaxed\t'The listener flushes its ledger at most every 20 ms and `enqueue` flushes nothing: a crash of the listener changes nothing, but a power loss may run a job started in the last moments a second time, or lose one queued in the last seconds (or leave it torn, and then rejected)'"
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand status" -l all -d 'Show every target under the root'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand status" -l json -d 'Print one JSON document on stdout, for programs'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand status" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand verify-marker" -s t -l target -d 'Check against this target [default: the folder the file sits in]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand verify-marker" -l root -d 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand verify-marker" -l key-file -d 'The fleet key file [default: ~/.claude/fleet-dispatch.key]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand verify-marker" -l machine -d 'This machine\'s name [default: the host name]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand verify-marker" -l state-dir -d 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand verify-marker" -l durability -d 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments\' work) [default: full]' -r -f -a "full\t'Every job\'s start and result are flushed before the next step, and a queued job\'s folder entry before `enqueue` returns'
relaxed\t'The listener flushes its ledger at most every 20 ms and `enqueue` flushes nothing: a crash of the listener changes nothing, but a power loss may run a job started in the last moments a second time, or lose one queued in the last seconds (or leave it torn, and then rejected)'"
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand verify-marker" -l json -d 'Print one JSON document on stdout, for programs'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand verify-marker" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand demo" -l root -d 'The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand demo" -l key-file -d 'The fleet key file [default: ~/.claude/fleet-dispatch.key]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand demo" -l machine -d 'This machine\'s name [default: the host name]' -r
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand demo" -l state-dir -d 'Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]' -r -F
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand demo" -l durability -d 'How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments\' work) [default: full]' -r -f -a "full\t'Every job\'s start and result are flushed before the next step, and a queued job\'s folder entry before `enqueue` returns'
relaxed\t'The listener flushes its ledger at most every 20 ms and `enqueue` flushes nothing: a crash of the listener changes nothing, but a power loss may run a job started in the last moments a second time, or lose one queued in the last seconds (or leave it torn, and then rejected)'"
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand demo" -l keep -d 'Keep the temporary folder and print where it is'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand demo" -l json -d 'Print one JSON document on stdout, for programs'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand demo" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand help; and not __fish_seen_subcommand_from keygen enqueue listen result cancel sweep status verify-marker demo help" -f -a "keygen" -d 'Create the fleet key file (32 random bytes as 64 hex characters, mode 600)'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand help; and not __fish_seen_subcommand_from keygen enqueue listen result cancel sweep status verify-marker demo help" -f -a "enqueue" -d 'Sign a job and drop it into a target\'s inbox; prints its id'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand help; and not __fish_seen_subcommand_from keygen enqueue listen result cancel sweep status verify-marker demo help" -f -a "listen" -d 'Run this machine\'s jobs: drain its inbox one job at a time'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand help; and not __fish_seen_subcommand_from keygen enqueue listen result cancel sweep status verify-marker demo help" -f -a "result" -d 'Show a job\'s verified result'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand help; and not __fish_seen_subcommand_from keygen enqueue listen result cancel sweep status verify-marker demo help" -f -a "cancel" -d 'Ask a target to stop a job (running or still queued)'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand help; and not __fish_seen_subcommand_from keygen enqueue listen result cancel sweep status verify-marker demo help" -f -a "sweep" -d 'Remove stale cancel markers and our stale temp files (for cron)'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand help; and not __fish_seen_subcommand_from keygen enqueue listen result cancel sweep status verify-marker demo help" -f -a "status" -d 'Show what is running, queued, cancelled and finished, per target'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand help; and not __fish_seen_subcommand_from keygen enqueue listen result cancel sweep status verify-marker demo help" -f -a "verify-marker" -d 'Explain whether a cancel marker would be accepted, and why'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand help; and not __fish_seen_subcommand_from keygen enqueue listen result cancel sweep status verify-marker demo help" -f -a "demo" -d 'Run the whole lane on a temporary folder and narrate each step'
complete -c fleet-dispatch -n "__fish_fleet_dispatch_using_subcommand help; and not __fish_seen_subcommand_from keygen enqueue listen result cancel sweep status verify-marker demo help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
