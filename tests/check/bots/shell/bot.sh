#!/bin/bash
# A Piranhas bot in bash: the connection is bash's /dev/tcp, the XML is read tag by tag
# (read -d '>'), and the moves are computed with shell arithmetic. It plays the first legal
# move it finds, starting from a random fish.
host=localhost port=13050 reservation=
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--host) host=$2; shift 2 ;;
        -p|--port) port=$2; shift 2 ;;
        -r|--reservation) reservation=$2; shift 2 ;;
        --host=*) host=${1#*=}; shift ;;
        --port=*) port=${1#*=}; shift ;;
        --reservation=*) reservation=${1#*=}; shift ;;
        *) echo "bot.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
exec 3<>"/dev/tcp/$host/$port" || exit 1
if [ -n "$reservation" ]; then
    printf '<protocol><joinPrepared reservationCode="%s"/>' "$reservation" >&3
else
    printf '<protocol><join gameType="swc_2026_piranhas"/>' >&3
fi

DX=(0 1 1 1 0 -1 -1 -1) DY=(1 1 0 -1 -1 -1 0 1)
NAMES=(UP UP_RIGHT RIGHT DOWN_RIGHT DOWN DOWN_LEFT LEFT UP_LEFT)
# board[y*10+x]: 0 empty, 1 ours, 2 theirs, 3 squid
declare -a board
room= team=ONE turn=0 cells=0

owner() {  # owner FIELDNAME: the next board cell is 0 empty, 1 ours, 2 theirs, 3 squid
    case "$1" in
        EMPTY) board[cells]=0 ;; SQUID) board[cells]=3 ;;
        "$team"_*) board[cells]=1 ;; *) board[cells]=2 ;;
    esac
    cells=$((cells + 1))
}

line_count() {  # line_count X Y D: fish on the whole line through (X,Y) along D's axis, in $count
    local x=$1 y=$2 dx=${DX[$3]} dy=${DY[$3]} n=0 i j
    for s in 1 -1; do
        i=$x; j=$y
        [ $s = -1 ] && { i=$((x - dx)); j=$((y - dy)); }
        while ((i >= 0 && i < 10 && j >= 0 && j < 10)); do
            local v=${board[j*10+i]}
            ((v == 1 || v == 2)) && n=$((n + 1))
            i=$((i + s * dx)); j=$((j + s * dy))
        done
    done
    count=$n
}

legal() {  # legal X Y D: exit status 0 when the move is legal
    local x=$1 y=$2 d=$3 dist step i j
    line_count "$x" "$y" "$d"; dist=$count
    for ((step = 1; step < dist; step++)); do
        i=$((x + step * DX[d])); j=$((y + step * DY[d]))
        { [ $i -lt 0 ] || [ $i -ge 10 ] || [ $j -lt 0 ] || [ $j -ge 10 ]; } && return 1
        [ "${board[j*10+i]}" = 2 ] && return 1
    done
    i=$((x + dist * DX[d])); j=$((y + dist * DY[d]))
    { [ $i -lt 0 ] || [ $i -ge 10 ] || [ $j -lt 0 ] || [ $j -ge 10 ]; } && return 1
    local t=${board[j*10+i]}
    [ "$t" = 1 ] || [ "$t" = 3 ] && return 1
    return 0
}

move() {
    local start=$((RANDOM % 100)) k c x y d
    for ((k = 0; k < 100; k++)); do
        c=$(((start + k) % 100)); x=$((c % 10)); y=$((c / 10))
        [ "${board[c]}" = 1 ] || continue
        for d in 0 1 2 3 4 5 6 7; do
            if legal $x $y $d; then
                printf '<room roomId="%s"><data class="move"><from x="%d" y="%d"/><direction>%s</direction></data></room>' \
                    "$room" $x $y "${NAMES[d]}" >&3
                return
            fi
        done
    done
    echo "bot.sh: no legal move found at turn $turn" >&2
}

while IFS= read -r -d '>' -u 3 token; do
    token=${token#"${token%%[![:space:]]*}"}  # strip leading whitespace
    case "$token" in
        '<joined roomId="'*) room=${token#*roomId=\"}; room=${room%%\"*} ;;
        *'class="welcomeMessage"'*) team=${token#*color=\"}; team=${team%%\"*} ;;
        '<state '*) turn=${token#*turn=\"}; turn=${turn%%\"*}; cells=0 ;;
        *'</field') owner "${token%</field}" ;;
        *'class="moveRequest"'*) move ;;
        '<left '*) printf '<close/></protocol>' >&3; exit 0 ;;
    esac
done
exit 0
