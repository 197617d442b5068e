// A Piranhas bot in plain Java (no libraries): a socket, a small reader that cuts the
// server's stream into whole messages however the bytes arrive, and the move rules.
// Built with javac into a fat jar with Main-Class (tests/check/test_check_bots.py).
import java.io.*;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.regex.*;

public class Bot {
    static final int[] DX = {0, 1, 1, 1, 0, -1, -1, -1};
    static final int[] DY = {1, 1, 0, -1, -1, -1, 0, 1};
    static final String[] NAMES = {"UP", "UP_RIGHT", "RIGHT", "DOWN_RIGHT", "DOWN", "DOWN_LEFT", "LEFT", "UP_LEFT"};
    static final Pattern FIELD = Pattern.compile("<field>(\\w+)</field>");
    static final Pattern ATTR_ROOM = Pattern.compile("roomId=\"([^\"]*)\"");
    static final Pattern ATTR_COLOR = Pattern.compile("color=\"([^\"]*)\"");
    static final Pattern MESSAGE = Pattern.compile("\\s*(<protocol>|<room [^>]*>.*?</room>|<(joined|left)\\s[^>]*/>|</protocol>)", Pattern.DOTALL);

    int[] board = new int[100]; // 0 empty, 1 ours, 2 theirs, 3 squid
    String team = "ONE", room = "";
    Random random = new Random(1);

    public static void main(String[] args) throws IOException {
        String host = "localhost", reservation = null;
        int port = 13050;
        for (int i = 0; i < args.length; i++) {
            String a = args[i], v = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) { v = a.substring(eq + 1); a = a.substring(0, eq); }
            else if (i + 1 < args.length) v = args[i + 1];
            boolean inline = args[i].contains("=") && args[i].startsWith("--");
            switch (a) {
                case "-h": case "--host": host = v; break;
                case "-p": case "--port": port = Integer.parseInt(v); break;
                case "-r": case "--reservation": reservation = v; break;
                default: System.err.println("unknown argument " + a); System.exit(2);
            }
            if (!inline) i++;
        }
        new Bot().play(host, port, reservation);
    }

    void play(String host, int port, String reservation) throws IOException {
        try (Socket socket = new Socket(host, port)) {
            socket.setTcpNoDelay(true);
            Writer out = new OutputStreamWriter(socket.getOutputStream(), StandardCharsets.UTF_8);
            Reader in = new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8);
            out.write(reservation != null
                ? "<protocol><joinPrepared reservationCode=\"" + reservation + "\"/>"
                : "<protocol><join gameType=\"swc_2026_piranhas\"/>");
            out.flush();
            StringBuilder buffer = new StringBuilder();
            char[] chunk = new char[65536];
            int n;
            while ((n = in.read(chunk)) > 0) {
                buffer.append(chunk, 0, n);
                Matcher m;
                while ((m = MESSAGE.matcher(buffer)).lookingAt()) {
                    String message = m.group(1);
                    buffer.delete(0, m.end());
                    if (!handle(message, out)) return;
                }
            }
        }
    }

    boolean handle(String message, Writer out) throws IOException {
        if (message.startsWith("<joined")) {
            Matcher m = ATTR_ROOM.matcher(message);
            if (m.find()) room = m.group(1);
        } else if (message.startsWith("<left") || message.equals("</protocol>")) {
            out.write("<close/>");
            out.flush();
            return false;
        } else if (message.contains("class=\"welcomeMessage\"")) {
            Matcher m = ATTR_COLOR.matcher(message);
            if (m.find()) team = m.group(1);
        } else if (message.contains("class=\"memento\"")) {
            Matcher m = FIELD.matcher(message);
            int cell = 0;
            while (m.find() && cell < 100) {
                String f = m.group(1);
                board[cell++] = f.equals("EMPTY") ? 0 : f.equals("SQUID") ? 3 : f.startsWith(team) ? 1 : 2;
            }
        } else if (message.contains("class=\"moveRequest\"")) {
            out.write(move());
            out.flush();
        }
        return true;
    }

    int at(int x, int y) { return board[y * 10 + x]; }
    boolean inside(int x, int y) { return x >= 0 && x < 10 && y >= 0 && y < 10; }

    boolean legal(int x, int y, int d) {
        int count = 0;
        for (int s = -1; s <= 1; s += 2)
            for (int i = (s == 1 ? 0 : 1); inside(x + s * i * DX[d], y + s * i * DY[d]); i++) {
                int v = at(x + s * i * DX[d], y + s * i * DY[d]);
                if (v == 1 || v == 2) count++;
            }
        for (int step = 1; step < count; step++) {
            int i = x + step * DX[d], j = y + step * DY[d];
            if (!inside(i, j) || at(i, j) == 2) return false;
        }
        int i = x + count * DX[d], j = y + count * DY[d];
        return inside(i, j) && at(i, j) != 1 && at(i, j) != 3;
    }

    String move() {
        int start = random.nextInt(100);
        for (int k = 0; k < 100; k++) {
            int c = (start + k) % 100, x = c % 10, y = c / 10;
            if (board[c] != 1) continue;
            for (int d = 0; d < 8; d++)
                if (legal(x, y, d))
                    return "<room roomId=\"" + room + "\"><data class=\"move\"><from x=\"" + x + "\" y=\"" + y
                        + "\"/><direction>" + NAMES[d] + "</direction></data></room>";
        }
        return "";
    }
}
