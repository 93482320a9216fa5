# fish completion for ward.
#
# Subcommands and options are read from `ward ... --help` of the ward being completed, so that
# they are those of that very binary. Values: profile names (`ward profiles list --names`, else
# the profile files of the installation and of ~/.config/ward/profiles), session ids
# (`ward audit list --json`; running sessions for --session), and the fixed words of
# --workspace, --decision, --allow-degraded and --scope.

# Lines "sub NAME", "opt NAME" (a flag) and "val NAME" (takes a value) of `ward WORDS... --help`.
function __ward_help
    $argv --help 2>/dev/null | awk '
        /^[^ ].*:$/ { section = $0; next }
        section ~ /[Oo]ptions/ && /^  -/ {  # "Options:" and every group of options
            spec = substr($0, 3); sub(/  .*/, "", spec)
            n = split(spec, parts, " "); m = split(parts[1], names, ",")
            for (i = 1; i <= m; i++) print (n > 1 ? "val " : "opt ") names[i]
            next
        }
        section == "Subcommands:" && /^  [a-z]/ { print "sub " $1 }'
end

function __ward_profiles
    set -l ward $argv[1]
    set -l names ($ward profiles list --names 2>/dev/null)
    if test $status -eq 0; and test (count $names) -gt 0
        printf '%s\n' $names
        return
    end
    set -l bin (command -s $ward; or echo $ward)
    set -l config ~/.config
    set -q XDG_CONFIG_HOME[1]; and set config $XDG_CONFIG_HOME
    for file in (dirname $bin)/../share/ward/profiles/*.toml $config/ward/profiles/*.toml
        basename $file .toml
    end
end

# Session ids of the audit trail, newest first; with "running", only sessions still running.
function __ward_sessions
    set -l which all
    set -q argv[2]; and set which $argv[2]
    $argv[1] audit list --json 2>/dev/null | tr '{' '\n' | awk -v which=$which '
        match($0, /"id":"[A-Za-z0-9._-]+"/) {
            id = substr($0, RSTART + 6, RLENGTH - 7)
            if (which != "running" || $0 ~ /"ended":false/) print id
        }'
end

function __ward_complete
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    set -l ward $tokens[1]
    set -l help (__ward_help $ward)
    set -l cmdpath
    set -l positionals 0
    set -l i 2
    while test $i -le (count $tokens)
        set -l w $tokens[$i]
        if test "$w" = --
            # The sandboxed command: complete it as if it were typed alone.
            set -l rest
            if test $i -lt (count $tokens)
                set rest $tokens[(math $i + 1)..-1]
            end
            complete -C (string join ' ' -- (string escape -- $rest) "$cur")
            return
        end
        if string match -q -- '-*' $w
            if not string match -q -- '*=*' $w; and contains -- "val $w" $help
                set i (math $i + 1)
            end
        else if test $positionals -eq 0; and contains -- "sub $w" $help
            set -a cmdpath $w
            set help (__ward_help $ward $cmdpath)
        else
            set positionals (math $positionals + 1)
        end
        set i (math $i + 1)
    end

    set -l prev $tokens[-1]
    set -l prefix ''
    if string match -q -- '--*=*' $cur
        set prev (string split -m1 = -- $cur)[1]
        set prefix $prev=
        set cur (string split -m1 = -- $cur)[2]
    end
    if string match -q -- '-*' $prev; and contains -- "val $prev" $help
        set -l values
        switch $prev
            case -p --profile
                set values (__ward_profiles $ward)
            case --session
                set values (__ward_sessions $ward running)
            case --workspace
                set values direct overlay copy
            case --decision
                set values allow ask none
            case --allow-degraded
                set values landlock seccomp limits
            case --scope
                set values once session
            case -C --workdir --audit-dir --state-dir
                set values (__fish_complete_directories $cur)
            case -w --write -r --read --deny --socket --install --shell --approver-secret-file --upstream-ca
                set values (__fish_complete_path $cur)
        end
        for v in $values
            echo $prefix$v
        end
        return
    end
    if string match -q -- '-*' $cur
        string replace -r -f '^(opt|val) ' '' -- $help
        return
    end
    set -l subs (string replace -r -f '^sub ' '' -- $help)
    if test (count $subs) -gt 0; and test $positionals -eq 0
        printf '%s\n' $subs
        return
    end
    switch "$cmdpath"
        case 'audit show' 'audit verify'
            echo last
            __ward_sessions $ward
        case '*'
            __fish_complete_path $cur
    end
end

complete -c ward -f -a '(__ward_complete)'
